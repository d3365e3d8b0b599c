"""Eight bytes at a time for the numba kernels ("SIMD within a register"): an unaligned 8-byte load, population
count and count of trailing zeros (LLVM's own instructions, through numba's documented `intrinsic` extension),
and the classic has-zero-byte test. A kernel that skips over bytes looking for a few byte values (a newline, an
"=") tests eight of them with a handful of integer operations instead of eight loads and branches. And 64 bytes
at a time where the buffer has them (`in_ranges64`: LLVM vector compares, one bit per byte), the 8-byte tools for
the buffer's last bytes.

Little-endian: byte i of a load at p is data[p + i], bits 8i..8i+7 (x86-64 and aarch64, the platforms numba
ships for).
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

ONES = np.uint64(0x0101010101010101)
HIGH = np.uint64(0x8080808080808080)
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
GATHER = np.uint64(0x0102040810204080)


def repeat_byte(b: int) -> np.uint64:
    """The byte b in all eight lanes (the operand of `has_byte`)."""
    return np.uint64(b * 0x0101010101010101)


@intrinsic
def load8(typingctx, arr, idx):
    """data[idx:idx + 8] as one little-endian uint64 (any alignment; the caller keeps idx + 8 <= len(data))."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
    return types.uint64(arr, types.intp), codegen


@intrinsic
def popcount(typingctx, x):
    """Set bits of a uint64."""
    def codegen(context, builder, sig, args):
        return builder.ctpop(args[0])
    return types.uint64(types.uint64), codegen


@intrinsic
def trailing_zeros(typingctx, x):
    """Zero bits below the lowest set bit of a uint64 (64 for 0)."""
    def codegen(context, builder, sig, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
    return types.uint64(types.uint64), codegen


_V64 = ir.VectorType(ir.IntType(8), 64)


@intrinsic
def in_ranges64(typingctx, arr, idx, lo1, n1, lo2, n2):
    """Bit j set when byte data[idx + j] lies in lo1..lo1 + n1 - 1 or in lo2..lo2 + n2 - 1 (n = 0: an empty range),
    for the 64 bytes from idx (the caller keeps idx + 64 <= len(data)): one vector load, two subtractions and
    unsigned compares, and the 64 lanes' results as the bits of a uint64 (LLVM's vector types: a compare and a
    mask move per 16, 32 or 64 bytes, as the CPU has them)."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        v = builder.load(builder.bitcast(builder.gep(ary.data, [args[1]]), _V64.as_pointer()), align=1)

        def splat(x):
            lane = builder.insert_element(ir.Constant(_V64, ir.Undefined), builder.trunc(x, ir.IntType(8)),
                                          ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(lane, ir.Constant(_V64, ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), 64), [0] * 64))

        first = builder.icmp_unsigned("<", builder.sub(v, splat(args[2])), splat(args[3]))
        second = builder.icmp_unsigned("<", builder.sub(v, splat(args[4])), splat(args[5]))
        return builder.bitcast(builder.or_(first, second), ir.IntType(64))
    return types.uint64(arr, types.intp, types.intp, types.intp, types.intp, types.intp), codegen


@numba.njit(inline="always", cache=True)
def load_upto(data, p, end):
    """data[p:min(p + 8, end)] as a little-endian uint64, zero-padded (a load that must not pass `end`)."""
    x = np.uint64(0)
    for j in range(min(end - p, 8)):
        x |= np.uint64(data[p + j]) << np.uint64(8 * j)
    return x


@numba.njit(inline="always", cache=True)
def high_bits(m):
    """Bit 7 of byte j of m -> bit j of the result (8 bits; m has no other bits): the multiplier's terms land on
    distinct bits, no carries."""
    return ((m >> np.uint64(7)) * GATHER) >> np.uint64(56)


@numba.njit(inline="always", cache=True)
def zero_bytes(v):
    """Nonzero exactly when a byte of v is 0; then its lowest set bit is the high bit of v's first zero byte
    (higher bits may be false alarms after a zero byte, never before one)."""
    return (v - ONES) & ~v & HIGH


@numba.njit(inline="always", cache=True)
def each_zero_byte(v):
    """The high bit of every zero byte of v, and no other bit (no false alarms: slower than `zero_bytes`; for
    counting)."""
    return ~(((v & LOW7) + LOW7) | v | LOW7)


@numba.njit(inline="always", cache=True)
def count_byte(data, b, a, z):
    """How many bytes of data[a:z] equal b."""
    b8 = np.uint64(b) * ONES
    n = np.uint64(0)
    i = a
    while i + 64 <= z:
        n += popcount(in_ranges64(data, i, b, 1, 0, 0))
        i += 64
    while i + 8 <= z:
        n += popcount(each_zero_byte(load8(data, i) ^ b8))
        i += 8
    m = np.int64(n)
    while i < z:
        m += data[i] == b
        i += 1
    return m


@numba.njit(inline="always", cache=True)
def has_byte(x, b8):
    """`zero_bytes` of x ^ b8: where x holds the byte that b8 (`repeat_byte`) repeats."""
    return zero_bytes(x ^ b8)


@numba.njit(inline="always", cache=True)
def continuation_bytes(x):
    """UTF-8 continuation bytes (10xxxxxx) among the eight bytes of x."""
    return popcount(x & ~(x << np.uint64(1)) & HIGH)

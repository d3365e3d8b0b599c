"""The one TOML reader of every config file (audit.toml, contamination.toml): the file's tables, or one line naming
the file and what is wrong with it."""
from __future__ import annotations

import os
import tomllib

from dataaudit.errors import DataAuditError
from dataaudit.io import read_text


def read_toml(path: str | os.PathLike, error: type[DataAuditError] = DataAuditError) -> dict:
    """The parsed file; `error` (the config's own error type) for a missing, unreadable or invalid one."""
    try:
        return tomllib.loads(read_text(path))
    except FileNotFoundError:
        raise error(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None

"""The storage servers of the object-store tests, each started once per session on 127.0.0.1 on a free port, in its
own process, and stopped after the session:
- S3: moto in server mode (`moto[server]`, a dev dependency). IAM authentication is on (its first three requests
  make a user, its policy and its key), so wrong credentials are a real 403;
- GCS: gcp-storage-emulator (a dev dependency);
- Azure: Azurite's blob service (`azurite-blob`, from npm: the tests that need it skip without it).
The tests use the real clients (pyarrow.fs, as dataaudit does), never a patched one; each test gets its own bucket,
and the endpoint and credentials through the environment for that test only."""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from dataaudit.io import STORAGE_ENV

MOTO_MISSING = "moto[server] is not installed (pip install 'moto[server]', in the dev extra)"
GCS_MISSING = "gcp-storage-emulator is not installed (pip install gcp-storage-emulator, in the dev extra)"
READY_SECONDS = 30.0     # the server imports Flask and every moto backend it serves before it answers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmulatorServer:
    """A storage server in its own process on 127.0.0.1: `start` runs it and waits (bounded) until `ready()`
    answers; `stop()` ends it (also what a test of a stopped server calls on a server of its own)."""

    name = "server"

    def start(self, command: list[str], env: dict | None = None) -> None:
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_SECONDS
        while True:
            try:
                self.ready()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{self.name} on port {self.port} did not answer within {READY_SECONDS} s")
                time.sleep(0.1)

    def ready(self) -> None:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            pass

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class MotoServer(EmulatorServer):
    """`python -m moto.server` on a free port."""

    name = "moto server"

    def __init__(self, auth: bool = True):
        if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
            pytest.skip(MOTO_MISSING)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3" if auth else "inf"}
        self.start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)], env)
        self.key, self.secret = self._credentials() if auth else ("testing", "testing")

    def ready(self) -> None:
        urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=1).close()

    def _credentials(self) -> tuple[str, str]:
        """An IAM user allowed everything, and its access key (the three unauthenticated requests)."""
        import boto3

        iam = boto3.client("iam", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id="bootstrap",
                           aws_secret_access_key="bootstrap")
        iam.create_user(UserName="dataaudit-tests")
        iam.put_user_policy(UserName="dataaudit-tests", PolicyName="all", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="dataaudit-tests")["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def filesystem(self):
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key=self.key, secret_key=self.secret, endpoint_override=self.url,
                                 region="us-east-1", allow_bucket_creation=True)


class GcsServer(EmulatorServer):
    """A GCS emulator (`gcp-storage-emulator`, a dev dependency) on a free port, in memory; dataaudit reaches it
    through STORAGE_EMULATOR_HOST, as Google's clients do."""

    name = "GCS emulator"

    def __init__(self):
        if importlib.util.find_spec("gcp_storage_emulator") is None:
            pytest.skip(GCS_MISSING)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.start([sys.executable, "-m", "gcp_storage_emulator", "start", "--host", "127.0.0.1", "--port",
                    str(self.port), "--in-memory"])

    def ready(self) -> None:
        urllib.request.urlopen(f"{self.url}/storage/v1/b?project=test", timeout=1).close()

    def filesystem(self):
        from datetime import timedelta

        import pyarrow.fs as pafs

        return pafs.GcsFileSystem(anonymous=True, endpoint_override=f"127.0.0.1:{self.port}", scheme="http",
                                  project_id="tests", retry_time_limit=timedelta(seconds=10))


AZURITE_MISSING = "azurite-blob is not installed (npm install -g azurite: Azure's storage emulator)"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class AzuriteServer(EmulatorServer):
    """Azure's blob storage emulator (`azurite-blob`, from npm) on a free port, in memory; dataaudit reaches it
    through AZURE_STORAGE_CONNECTION_STRING, as Azure's SDKs do."""

    name = "azurite"

    def __init__(self):
        import shutil

        exe = shutil.which("azurite-blob")
        if exe is None:
            pytest.skip(AZURITE_MISSING)
        self.port = _free_port()
        self.connection_string = (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
                                  f"BlobEndpoint=http://127.0.0.1:{self.port}/devstoreaccount1;")
        self.start([exe, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--inMemoryPersistence",
                    "--skipApiVersionCheck", "--loose", "--silent"])

    def filesystem(self):
        import pyarrow.fs as pafs

        where = f"127.0.0.1:{self.port}"
        return pafs.AzureFileSystem(account_name="devstoreaccount1", account_key=AZURITE_KEY,
                                    blob_storage_authority=where, dfs_storage_authority=where,
                                    blob_storage_scheme="http", dfs_storage_scheme="http")


@pytest.fixture(scope="session")
def azurite_server():
    server = AzuriteServer()
    yield server
    server.stop()


@pytest.fixture
def azure_container(azurite_server, monkeypatch) -> "Bucket":
    """A new container on Azurite, with AZURE_STORAGE_CONNECTION_STRING set for this test."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite_server.connection_string)
    return new_bucket(azurite_server, "abfs")


@pytest.fixture(scope="session")
def gcs_server():
    server = GcsServer()
    yield server
    server.stop()


@pytest.fixture
def gcs_bucket(gcs_server, monkeypatch) -> "Bucket":
    """A new bucket on the GCS emulator, with STORAGE_EMULATOR_HOST set for this test."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.url)
    return new_bucket(gcs_server, "gs")


@pytest.fixture(scope="session")
def moto_server():
    server = MotoServer()
    yield server
    server.stop()


@dataclass
class Bucket:
    """A fresh bucket on the server: `uri(key)` names an object, `put(local, key)` uploads a file or a folder."""

    name: str
    fs: object
    scheme: str = "s3"

    def uri(self, key: str = "") -> str:
        return f"{self.scheme}://{self.name}/{key}"

    def put(self, local: Path, key: str) -> str:
        import pyarrow.fs as pafs

        local = Path(local)
        if local.is_dir():
            pafs.copy_files(str(local), f"{self.name}/{key}".rstrip("/"), destination_filesystem=self.fs)
        else:
            with open(local, "rb") as src, self.fs.open_output_stream(f"{self.name}/{key}") as out:
                out.write(src.read())
        return self.uri(key)

    def get(self, key: str) -> bytes:
        with self.fs.open_input_stream(f"{self.name}/{key}") as f:
            return f.read()

    def keys(self, prefix: str = "") -> list[str]:
        import pyarrow.fs as pafs

        sel = pafs.FileSelector(f"{self.name}/{prefix}".rstrip("/"), recursive=True, allow_not_found=True)
        return sorted(i.path[len(self.name) + 1:] for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File)


def s3_environment(monkeypatch, server: MotoServer, key: str | None = None, secret: str | None = None) -> None:
    """The endpoint and credentials as a user's shell has them, for this test only (monkeypatch undoes them)."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", server.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key or server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret or server.secret)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")    # never ask an instance-metadata address
    monkeypatch.setenv(STORAGE_ENV, "")                         # --storage-option of an earlier command: gone


def new_bucket(server: EmulatorServer, scheme: str) -> "Bucket":
    """A new bucket (container) on the server, under a unique name: no test depends on another's objects or order."""
    fs = server.filesystem()
    name = f"t-{uuid.uuid4().hex[:16]}"
    fs.create_dir(name)
    return Bucket(name, fs, scheme)


@pytest.fixture
def bucket(moto_server, monkeypatch) -> Bucket:
    """A new bucket (a unique name: no test depends on another's objects or order), with the environment set."""
    s3_environment(monkeypatch, moto_server)
    return new_bucket(moto_server, "s3")


@pytest.fixture
def corpus(tmp_path, bucket) -> Path:
    """tests/objectstore/corpus.py's shards, written locally and copied to the bucket's train/ prefix."""
    from tests.objectstore.corpus import write_corpus

    train = write_corpus(tmp_path / "local")
    bucket.put(train, "train")
    return train


@pytest.fixture
def proxy(moto_server, bucket, monkeypatch):
    """The bucket's server behind a counting proxy (tests/objectstore/proxy.py) for this test: what dataaudit asks
    of the store goes through it (the environment's endpoint is the proxy's); the bucket's own uploads and reads
    (`bucket.put`, `bucket.get`) go to the server directly and are not counted."""
    from tests.objectstore.proxy import CountingProxy

    counting = CountingProxy(moto_server.port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", counting.url)
    yield counting
    counting.stop()

import os

import pytest

from minikafka.storage import files
from minikafka.storage.dir_lock import DataDirLock
from minikafka.storage.errors import StartupError


def test_second_lock_on_a_dir_is_refused_with_the_holders_pid(tmp_path):
    first = DataDirLock(tmp_path)
    first.acquire()
    with pytest.raises(StartupError, match=f"pid {os.getpid()}"):
        DataDirLock(tmp_path).acquire()
    first.release()
    again = DataDirLock(tmp_path)
    again.acquire()  # released: the file stays, the lock does not
    assert again.held and (tmp_path / ".lock").exists()
    again.release()


@pytest.mark.parametrize("content,reason", [
    (b"\xff\xfe\x80", "not text"), (b"hello\n", "no node.id"), (b"node.id=x\ncluster.id=c\n", "not a number"),
])
def test_unreadable_meta_properties(tmp_path, content, reason):
    (tmp_path / "meta.properties").write_bytes(content)
    with pytest.raises(StartupError, match=reason):
        files.read_meta_properties(tmp_path)

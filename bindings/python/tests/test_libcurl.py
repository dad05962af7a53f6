"""libcurl is loaded at run time, not linked: a machine without it gets an error naming the
package to install, and a GnuTLS build of it serves as well as the OpenSSL one."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

import sheaf
from conftest import REPO

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="hides libcurl in a mount namespace of its own (Linux, root, unshare)")


def _libcurl_files(pattern: str) -> list:
    return sorted({os.path.realpath(path) for path in glob.glob(f"/usr/lib/*/{pattern}") + glob.glob(f"/usr/lib/{pattern}")})


def _request_with_hidden(api, hidden: list) -> subprocess.CompletedProcess:
    """A request from a process that sees each file of `hidden` as empty."""
    code = ("import sheaf\n"
            f"with sheaf.Client({api.base_url!r}, max_attempts=1) as client:\n"
            "    try:\n"
            "        print(client.get('/req/echo').json()['method'])\n"
            "    except sheaf.TransportError as error:\n"
            "        print('TransportError:', error)\n")
    hide = " && ".join(f"mount --bind /dev/null {path}" for path in hidden)
    # A sanitizer's LD_PRELOAD is for the Python process only, not for sh and mount.
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    env.update(PYTHONPATH=str(REPO / "bindings" / "python"), SHEAF_LIBRARY_PATH=sheaf.library_path,
               PRELOAD_FOR_PYTHON=os.environ.get("LD_PRELOAD", ""))
    script = f'{hide} && LD_PRELOAD="$PRELOAD_FOR_PYTHON" exec "$0" -c "$1"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, sys.executable, code],
                          capture_output=True, text=True, timeout=60, env=env)


def test_the_library_does_not_need_libcurl_to_load() -> None:
    needed = subprocess.run(["readelf", "-d", sheaf.library_path], capture_output=True, text=True, check=True).stdout
    assert "libcurl" not in needed and "libc.so.6" in needed


def test_without_libcurl_a_request_says_what_to_install(api) -> None:
    hidden = _libcurl_files("libcurl.so.4*") + _libcurl_files("libcurl-gnutls.so.4*")
    done = _request_with_hidden(api, hidden)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("TransportError:"), done.stdout
    assert "libcurl is not installed" in done.stdout and "libcurl4" in done.stdout


@pytest.mark.skipif(not _libcurl_files("libcurl-gnutls.so.4*"), reason="no GnuTLS build of libcurl here")
def test_a_gnutls_libcurl_serves_when_the_openssl_one_is_missing(api) -> None:
    done = _request_with_hidden(api, _libcurl_files("libcurl.so.4*"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "GET", done.stdout

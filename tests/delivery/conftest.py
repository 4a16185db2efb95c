"""The built site, once per session, and a local web server for it (shared by the site's tests)."""

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# How Chromium is started for the site's tests: nothing of its own on the network (no component
# updates, sync or QUIC probes), so every request a test sees was made by a page.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(autouse=True)
def fresh_asyncio_policy():
    """Playwright starts its driver as an asyncio subprocess. pyshark (tests/engine, run earlier in
    the same session) installs a SafeChildWatcher bound to an event loop it then closes, after which
    asyncio refuses every subprocess ("get_child_watcher() is not activated"); a fresh default
    policy brings back the ordinary child watcher for the site's tests."""
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    yield


@pytest.fixture(scope="session")
def chromium() -> list[str]:
    """The system's Chromium and its flags (Playwright drives it too, so no browser is downloaded);
    a caller adds a fresh --user-data-dir."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium not installed (apt-get install chromium; scripts/install-deps.sh --dev)")
    return [path, *CHROMIUM_ARGS]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """`mkdocs build --strict` into a fresh directory."""
    if not shutil.which("mkdocs", path=str(Path(sys.executable).parent)):
        pytest.skip("mkdocs not installed (pip install -e .[site])")
    out = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                        "-d", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # one line per request would bury pytest's own output
        pass


@pytest.fixture(scope="session")
def serve():
    """serve(root) -> base URL: an HTTP server for `root` on 127.0.0.1, stopped after the session."""
    servers = []

    def start(root: Path) -> str:
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture(scope="session")
def site_url(built, serve):
    return serve(built)

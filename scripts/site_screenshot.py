"""Screenshot a built site page's Plotly figures in headless Chromium, as a reader sees them.

    python scripts/site_screenshot.py build/site notebooks/03-parallel-tcp/ site/assets/screenshots/lab3-figures.png

Serves the built site on 127.0.0.1, opens the page in a 1280 px wide iframe scrolled to its first
Plotly figure (Chromium's --screenshot only takes the top of a page) and saves a PNG. Prints the
drawn width of every figure and of the text column, so the picture's claim is also in numbers.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HELPER = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="/%s" style="border:0;width:1280px;height:1400px"></iframe>
<script>
document.getElementById("f").addEventListener("load", function () {
  var d = this.contentDocument, figs = d.querySelectorAll(".mlab-plotly");
  var col = d.querySelector(".md-content");
  if (figs.length) this.contentWindow.scrollTo(0, figs[0].getBoundingClientRect().top + this.contentWindow.scrollY - 80);
  var out = document.createElement("pre");
  out.id = "widths";
  out.textContent = "column " + (col ? Math.round(col.getBoundingClientRect().width) : "?") + " figures " +
    Array.prototype.map.call(figs, function (f) { return Math.round(f.getBoundingClientRect().width); }).join(",");
  document.body.appendChild(out);
});
</script></body></html>"""


def main(site: str, page: str, png: str) -> int:
    root = Path(site).resolve()
    (root / "_screenshot.html").write_text(HELPER % page)
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/_screenshot.html"
    flags = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--no-first-run", "--hide-scrollbars", "--window-size=1280,1400", "--virtual-time-budget=20000"]
    try:
        with tempfile.TemporaryDirectory() as profile:
            Path(png).parent.mkdir(parents=True, exist_ok=True)
            subprocess.run([*flags, f"--user-data-dir={profile}", f"--screenshot={Path(png).resolve()}", url],
                           capture_output=True, timeout=240, check=True)
        with tempfile.TemporaryDirectory() as profile:
            dom = subprocess.run([*flags, f"--user-data-dir={profile}", "--dump-dom", url],
                                 capture_output=True, text=True, timeout=240).stdout
        print(dom.split('<pre id="widths">')[1].split("</pre>")[0] if '<pre id="widths">' in dom else "widths: not found")
    finally:
        server.shutdown()
        (root / "_screenshot.html").unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))

"""Screenshot a notebook open in JupyterLab, once JupyterLab has drawn it.

    python screenshot.py URL OUT.png [--timeout 900]

Chromium's own `--screenshot` shoots after a fixed budget; in a software-emulated VM JupyterLab
took longer than that to load its front end and the first acceptance run's picture was blank.
Playwright (driving the system's Chromium, so nothing is downloaded) waits instead for the
notebook's rendered cells, then shoots, and prints how long drawing took.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from playwright.sync_api import sync_playwright

# A notebook is drawn when its first Markdown cell has rendered HTML (the lab's title).
DRAWN = ".jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown h1"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("out")
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the notebook (900)")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("screenshot: no chromium on PATH (apt-get install chromium)")
    t0 = time.monotonic()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(args.url, timeout=args.timeout * 1000)
        page.wait_for_selector(DRAWN, timeout=args.timeout * 1000)
        page.wait_for_timeout(2000)  # let the rest of the first screen's cells lay out
        page.screenshot(path=args.out)
        title = page.inner_text(DRAWN)
        browser.close()
    print(f"notebook drawn after {time.monotonic() - t0:.0f} s ({title!r}): {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

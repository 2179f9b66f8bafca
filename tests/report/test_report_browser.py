"""`twin report`'s page opened in a real browser (headless Chromium, the Debian package that
.ci/run installs): every image loads and the page is not blank. Skips only without chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib import image as mpimg
from typer.testing import CliRunner

from tests.conftest import SCENARIOS
from twin.cli import app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: A fresh profile and nothing that reaches for the network or a GPU.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
#: Appended to a copy of the page: after the load event, how many images there are and which
#: did not load (complete with a natural width of 0 means a broken image).
PROBE = """<script>
window.addEventListener('load', () => {
  const broken = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
  document.body.setAttribute('data-images', String(document.images.length));
  document.body.setAttribute('data-broken', JSON.stringify(broken));
});
</script>"""


def _chromium(tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=600, check=False, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian package 'chromium'; .ci/run installs it)")
def test_report_page_renders_in_chromium(tmp_path):
    run = tmp_path / "quickstart.nc"
    result = CliRunner().invoke(app, ["run", str(SCENARIOS / "quickstart.yaml"), "--duration", "15 min",
                                      "-o", str(run)])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "report"
    result = CliRunner().invoke(app, ["report", str(run), "-o", str(folder)])
    assert result.exit_code == 0, result.output
    page = folder / "index.html"
    n_images = len(re.findall(r"<img ", page.read_text()))
    assert n_images >= 6

    probe = folder / "probe.html"  # beside the page, so relative image paths resolve the same
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    dom = _chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    images = re.search(r'data-images="(\d+)"', dom.stdout)
    broken = re.search(r'data-broken="([^"]*)"', dom.stdout)
    assert images and broken, dom.stdout[-2000:]
    assert int(images.group(1)) == n_images
    assert json.loads(broken.group(1).replace("&quot;", '"')) == []

    shot = tmp_path / "page.png"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    rgb = mpimg.imread(shot)[..., :3]
    assert rgb.shape[:2] == (2400, 1280)
    # Not blank: plots and the table put many colours and a wide spread of brightness on the page.
    assert rgb.std() > 0.05, "the screenshot is blank"
    assert len(np.unique(rgb.reshape(-1, 3).round(2), axis=0)) > 100
    assert (rgb.mean(axis=2) < 0.9).mean() > 0.02  # at least 2 % of the page is ink, not background

#!/usr/bin/env python3
"""checks/catalogue/render_check.py: render the catalogue's HTML page in headless
Chromium and check the screenshot (ctest static.catalogue_html).

Writes <out>/catalogue.html (with --junit FILE when that file exists, from the
sources alone otherwise), screenshots it with headless Chromium into
<out>/catalogue.png, then checks the PNG: the expected size, many colours (text
was drawn) and every colour of the page's legend (the stylesheet applied).
Exits 77 (ctest SKIP_RETURN_CODE) when no Chromium is installed. Stdlib only.
"""

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
WIDTH, HEIGHT = 1400, 2000
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser():
    env = os.environ.get("CHROMIUM")
    if env and shutil.which(env):
        return shutil.which(env)
    for b in BROWSERS:
        path = shutil.which(b)
        if path:
            return path
    return None


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif ctype == b"IDAT":
            idat.append(chunk)
        elif ctype == b"IEND":
            break
    width, height, depth, color, _, _, interlace = ihdr
    if depth != 8 or color not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if ftype == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif ftype == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                c = prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        elif ftype != 0:
            raise ValueError(f"bad PNG filter {ftype}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def colour_counts(rows, bpp):
    counts = {}
    for row in rows:
        for x in range(0, len(row), bpp):
            key = row[x:x + 3]
            counts[key] = counts.get(key, 0) + 1
    return counts


def hex_rgb(h):
    h = h.lstrip("#")
    return bytes(int(h[i:i + 2], 16) for i in (0, 2, 4))


def near(counts, rgb, tol=3):
    return sum(n for c, n in counts.items() if all(abs(c[i] - rgb[i]) <= tol for i in range(3)))


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--out", required=True, help="directory for catalogue.html and catalogue.png")
    ap.add_argument("--junit", help="JUnit report to colour the page with, used if it exists")
    args = ap.parse_args()

    browser = find_browser()
    if not browser:
        print("SKIP: no headless Chromium found (tried $CHROMIUM, " + ", ".join(BROWSERS) + "); "
              "install the Debian package `chromium` (add it to ci/setup) to run this check")
        return SKIP

    os.makedirs(args.out, exist_ok=True)
    page = os.path.join(os.path.abspath(args.out), "catalogue.html")
    png = os.path.join(os.path.abspath(args.out), "catalogue.png")
    for f in (page, png):
        if os.path.exists(f):
            os.remove(f)
    cmd = [sys.executable, os.path.join(here, "catalogue"), "--root", args.root, "--html", page, "--quiet"]
    if args.junit and os.path.exists(args.junit):
        cmd += ["--junit", args.junit]
    r = subprocess.run(cmd, capture_output=True, text=True)
    # The page is drawn whatever the verdict; static.catalogue reports the errors.
    print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "(catalogue printed nothing)")
    if not os.path.exists(page):
        print(r.stdout + r.stderr)
        print(f"FAIL: the catalogue wrote no HTML page ({page})")
        return 1

    with tempfile.TemporaryDirectory(prefix="catalogue-chromium-") as profile:
        shot = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
                "--force-color-profile=srgb", f"--user-data-dir={profile}",
                f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", "file://" + page]
        try:
            r = subprocess.run(shot, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, HOME=profile))
        except subprocess.TimeoutExpired:
            print("FAIL: headless Chromium did not finish within 120 s")
            return 1
    if not os.path.exists(png):
        print(r.stdout + r.stderr)
        print(f"FAIL: headless Chromium ({browser}) wrote no screenshot (exit {r.returncode})")
        return 1

    size = os.path.getsize(png)
    try:
        width, height, bpp, rows = read_png(png)
    except (ValueError, zlib.error, struct.error, TypeError) as e:
        print(f"FAIL: {png} is not a readable PNG: {e}")
        return 1
    problems = []
    if (width, height) != (WIDTH, HEIGHT):
        problems.append(f"screenshot is {width}x{height}, expected {WIDTH}x{HEIGHT}")
    if size < 20000:
        problems.append(f"screenshot is only {size} bytes")
    counts = colour_counts(rows, bpp)
    if len(counts) < 50:
        problems.append(f"only {len(counts)} distinct colours: the page looks blank")
    # Every legend swatch of the page must show up (proves the stylesheet applied).
    legend = {"green (pass)": "#c9efcf", "red (fail)": "#f8c4c4", "amber (missing)": "#ffe0a3",
              "grey (none)": "#eeeeee"}
    for what, colour in legend.items():
        n = near(counts, hex_rgb(colour))
        if n < 200:
            problems.append(f"legend colour {what} {colour} drawn on {n} pixels only")
    if problems:
        print("FAIL: " + "; ".join(problems) + f" ({png})")
        return 1
    print(f"ok: {png}: {width}x{height}, {size} bytes, {len(counts)} colours; every legend colour present")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Distorted renderings of QR images, made with Pillow (independent of the toolkit's own image code), for
QRRobustnessTests: how often `verify` reads a QR as people really send it, per kind of distortion.

Usage: qr-distortions.py JOB.json
JOB: {"out": DIR, "sources": [{"name": N, "path": PNG, "modules": M}]}; M is the symbol's width in modules with
its quiet zone, so the image's pixels per module are known. Writes DIR/<source>-<distortion>-<level>.<png|jpg>
and DIR/manifest.json: [{"file", "source", "distortion", "level", "zxingcpp"}], where "zxingcpp" is the text the
zxing-cpp Python package (a mainstream decoder, the engine of many phone scanners) reads from the image, or
null: what a person's phone would likely read.

Deterministic: the random parts use fixed seeds (the photo's tilt) or Pillow's own generator in a fixed order
(noise).
"""
import json
import random
import sys

from PIL import Image, ImageChops, ImageDraw, ImageEnhance, ImageFilter

try:
    import zxingcpp
except ImportError:  # the comparison is left out; the renderings are still made
    zxingcpp = None

WHITE = 255


def at_scale(image, modules, px):
    """The image resampled to `px` pixels per module (bicubic; nearest for whole multiples of the source)."""
    side = max(8, round(modules * px))
    source_px = image.width / modules
    exact = abs(px / source_px - round(px / source_px)) < 1e-9 and px >= source_px
    return image.resize((side, side), Image.NEAREST if exact else Image.BICUBIC)


def pad(image, fraction):
    """A white margin of `fraction` of the side around the image (room to turn it)."""
    margin = round(image.width * fraction)
    out = Image.new("L", (image.width + 2 * margin, image.height + 2 * margin), WHITE)
    out.paste(image, (margin, margin))
    return out


def perspective(image, pull, seed):
    """Looked at from the side: two adjacent corners pulled in by `pull` of the side (a keystone)."""
    w, h = image.size
    rng = random.Random(seed)
    d = pull * w
    # Where each output corner comes from in the input (Pillow's PERSPECTIVE maps output to input).
    src = [(0 - d * rng.uniform(0.8, 1.0), 0), (w + d * rng.uniform(0.8, 1.0), 0), (w, h), (0, h)]
    dst = [(0, 0), (w, 0), (w, h), (0, h)]
    coeffs = find_coeffs(dst, src)
    return image.transform((w, h), Image.PERSPECTIVE, coeffs, Image.BICUBIC, fillcolor=WHITE)


def find_coeffs(output_points, input_points):
    """The 8 coefficients of the projective map taking output points to input points (solved exactly)."""
    rows = []
    rhs = []
    for (x, y), (u, v) in zip(output_points, input_points):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rhs.append(u)
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs.append(v)
    return solve(rows, rhs)


def solve(a, b):
    """Gaussian elimination with partial pivoting (8 × 8)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    return [m[i][n] / m[i][i] for i in range(n)]


def contrast(image, factor):
    """Contrast cut to `factor` around mid-gray, then lifted towards white (faded print)."""
    faded = ImageEnhance.Contrast(image).enhance(factor)
    return ImageEnhance.Brightness(faded).enhance(1 + (1 - factor) * 0.3)


def gradient_light(image, strength):
    """Uneven light: a shadow darkening one side by `strength` (0…1) of full scale, fading across the image."""
    w, h = image.size
    shade = Image.linear_gradient("L").rotate(90, expand=True).resize((w, h))
    factor = shade.point(lambda s: int(255 * (1 - strength * (255 - s) / 255)))
    return ImageChops.multiply(image, factor)


def glare(image, radius_fraction, seed):
    """A bright reflection: a white ellipse blended over part of the symbol."""
    w, h = image.size
    rng = random.Random(seed)
    mask = Image.new("L", (w, h), 0)
    draw = ImageDraw.Draw(mask)
    cx, cy = w * rng.uniform(0.35, 0.65), h * rng.uniform(0.35, 0.65)
    r = w * radius_fraction
    draw.ellipse([cx - r, cy - r * 0.7, cx + r, cy + r * 0.7], fill=200)
    mask = mask.filter(ImageFilter.GaussianBlur(r * 0.4))
    return Image.composite(Image.new("L", (w, h), WHITE), image, mask)


def noise(image, sigma):
    """Gaussian sensor noise of `sigma` gray levels (Pillow's generator: the same in every run)."""
    return ImageChops.add(image, Image.effect_noise(image.size, sigma), 1.0, -128)


def photo(image, modules, seed):
    """What a phone camera makes of a printed card: turned a little, seen a little from the side, slightly out
    of focus, unevenly lit, sensor noise, saved as JPEG by the phone."""
    rng = random.Random(seed)
    img = pad(at_scale(image, modules, 3.2), 0.15)
    img = img.rotate(rng.uniform(-8, 8), Image.BICUBIC, expand=True, fillcolor=WHITE)
    img = perspective(img, rng.uniform(0.03, 0.07), seed)
    img = img.filter(ImageFilter.GaussianBlur(0.35 * 3.2))
    img = gradient_light(img, rng.uniform(0.15, 0.3))
    img = noise(img, 5)
    return img, "jpeg", 70


def renderings(image, modules):
    """(distortion, level, image, format, jpeg quality) for every rendering of one source."""
    base = at_scale(image, modules, 4)  # 4 pixels per module, what `issue` writes
    out = []
    for px in [1.0, 1.25, 1.5, 2.0, 3.0]:
        out.append(("scale", f"{px:g} px/module", at_scale(image, modules, px), "png", None))
    for angle in [90, 180, 270]:
        out.append(("rotation", f"{angle}°", base.rotate(angle, expand=True), "png", None))
    for angle in [7, 22, 45]:
        out.append(("rotation", f"{angle}°", pad(base, 0.1).rotate(angle, Image.BICUBIC, expand=True, fillcolor=WHITE), "png", None))
    for pull in [0.05, 0.10, 0.20]:
        out.append(("perspective", f"{round(pull * 100)}%", perspective(pad(base, 0.1), pull, 7), "png", None))
    for sigma in [0.25, 0.5, 0.75]:
        out.append(("blur", f"σ {sigma:g} module", base.filter(ImageFilter.GaussianBlur(sigma * 4)), "png", None))
    small = at_scale(image, modules, 3)
    for quality in [75, 40, 20, 10]:
        out.append(("jpeg", f"quality {quality}", small, "jpeg", quality))
    for factor in [0.5, 0.25, 0.1]:
        out.append(("contrast", f"×{factor:g}", contrast(base, factor), "png", None))
    out.append(("light", "shadow 50%", gradient_light(base, 0.5), "png", None))
    out.append(("light", "glare", glare(base, 0.18, 3), "png", None))
    for sigma in [16, 32]:
        out.append(("noise", f"σ {sigma}", noise(base, sigma), "png", None))
    for seed in [1, 2, 3]:
        img, fmt, quality = photo(image, modules, seed)
        out.append(("photo", f"#{seed}", img, fmt, quality))
    return out


def main():
    job = json.load(open(sys.argv[1]))
    out_dir = job["out"]
    manifest = []
    for source in job["sources"]:
        image = Image.open(source["path"]).convert("L")
        for distortion, level, img, fmt, quality in renderings(image, source["modules"]):
            slug = "".join(c if c.isalnum() else "-" for c in level).strip("-")
            name = f"{source['name']}-{distortion}-{slug}.{'jpg' if fmt == 'jpeg' else 'png'}"
            path = f"{out_dir}/{name}"
            if fmt == "jpeg":
                img.save(path, "JPEG", quality=quality)
            else:
                img.save(path, "PNG")
            text = None
            if zxingcpp is not None:
                found = [b for b in zxingcpp.read_barcodes(Image.open(path).convert("L"))
                         if b.format == zxingcpp.BarcodeFormat.QRCode and b.valid]
                text = found[0].text if found else None
            manifest.append({"file": name, "source": source["name"], "distortion": distortion, "level": level,
                             "zxingcpp": text})
    json.dump(manifest, open(f"{out_dir}/manifest.json", "w"), indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the PNG, JPEG and GIF fixtures of tests/test_images.cpp with Pillow, a writer
independent of kiln, and beside each one `<name>.npy`: the values kiln must read, f32 [height,
width, channels] (the samples Pillow holds divided by 255, or 65535 for 16-bit files). The files are committed; run this only to change
them:  python3 tests/data/images/make_fixtures.py"""
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 7, 5  # odd sizes: rows that are not a multiple of 4 bytes, and partial JPEG blocks


def pattern(channels, scale=1):
    y, x, c = np.meshgrid(np.arange(H), np.arange(W), np.arange(channels), indexing="ij")
    return ((x * 37 + y * 91 + c * 53) % 256 * scale).astype(np.uint16 if scale > 1 else np.uint8)


def palette_image(index):
    image = Image.new("P", (W, H))
    image.putdata(index.flatten().tolist())
    return image


def expect(name, samples):
    """Writes the f32 values of uint8 or uint16 samples [h, w, c] (or [h, w]: one channel)."""
    scale = 65535.0 if samples.dtype == np.uint16 else 255.0
    values = (samples.astype(np.float64) / scale).astype(np.float32)
    np.save(os.path.join(HERE, name + ".npy"), values if values.ndim == 3 else values[:, :, None])


def save(name, image, expected, **options):
    image.save(os.path.join(HERE, name), **options)
    expect(name, expected)


def main():
    rgb, rgba, grey = pattern(3), pattern(4), pattern(1)[:, :, 0]
    # PNG: every colour type, bit depths 1, 8 and 16, a palette with transparency, interlacing.
    save("png_grey8.png", Image.fromarray(grey), grey[:, :, None])
    bits = (grey > 127).astype(np.uint8)
    save("png_grey1.png", Image.fromarray(bits * 255).convert("1"), (bits * 255)[:, :, None])
    grey16 = pattern(1, 257)[:, :, 0]
    save("png_grey16.png", Image.fromarray(grey16.astype(np.uint16)), grey16[:, :, None])
    la = np.stack([grey, 255 - grey], axis=2)
    save("png_grey_alpha.png", Image.fromarray(la), la)
    save("png_rgb_interlaced.png", Image.fromarray(rgb), rgb, interlace=1)
    save("png_rgba.png", Image.fromarray(rgba), rgba)
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [40, 80, 120]], np.uint8)
    index = ((np.arange(H)[:, None] + np.arange(W)[None, :]) % 4).astype(np.uint8)
    pal = palette_image(index)
    pal.putpalette(colours.flatten().tolist())
    save("png_palette.png", pal, colours[index])
    alpha = np.array([255, 255, 0, 128], np.uint8)
    save("png_palette_alpha.png", pal, np.concatenate([colours[index], alpha[index][:, :, None]], 2),
         transparency=bytes(alpha))
    # JPEG: grey, colour (4:4:4 baseline, 4:2:0 progressive) and CMYK (Adobe's inverted inks);
    # the expected pixels are Pillow's own decoding (libjpeg-turbo too).
    for name, image, options in [
            ("jpeg_grey.jpg", Image.fromarray(grey), {"quality": 90}),
            ("jpeg_rgb444.jpg", Image.fromarray(rgb), {"quality": 95, "subsampling": 0}),
            ("jpeg_rgb420_progressive.jpg", Image.fromarray(rgb),
             {"quality": 80, "subsampling": 2, "progressive": True}),
            ("jpeg_cmyk.jpg", Image.fromarray(rgb).convert("CMYK"), {"quality": 95})]:
        path = os.path.join(HERE, name)
        image.save(path, **options)
        back = np.asarray(Image.open(path))
        if back.shape[-1:] == (4,):
            # CMYK: the light each ink lets through, times the light black lets through.
            light = 1.0 - back.astype(np.float64) / 255.0
            np.save(path + ".npy", (light[:, :, :3] * light[:, :, 3:]).astype(np.float32))
        else:
            expect(name, back)
    # GIF: a palette, a transparent colour, an interlaced frame.
    gif = palette_image(index)
    gif.putpalette(colours.flatten().tolist())
    rgba_gif = np.concatenate([colours[index], np.full((H, W, 1), 255, np.uint8)], 2)
    rgba_gif[index == 2] = 0  # colour 2 is transparent: transparent black
    save("gif_transparent.gif", gif, rgba_gif, transparency=2)
    # An interlaced frame: Pillow writes the rows in interlaced order, then the descriptor's
    # interlace flag is set, so that the rows read back in their natural order.
    tall = ((np.arange(20)[:, None] * 3 + np.arange(W)[None, :]) % 4).astype(np.uint8)
    stored = [y for start, step in ((0, 8), (4, 8), (2, 4), (1, 2))
              for y in range(start, 20, step)]
    tall_gif = Image.new("P", (W, 20))
    tall_gif.putdata(tall[stored].flatten().tolist())
    tall_gif.putpalette(colours.flatten().tolist())
    path = os.path.join(HERE, "gif_interlaced.gif")
    tall_gif.save(path)
    data = bytearray(open(path, "rb").read())
    descriptor = 13 + 3 * (2 << (data[10] & 7))  # after the header and the global colour table
    assert data[descriptor] == 0x2C
    data[descriptor + 9] |= 0x40
    open(path, "wb").write(bytes(data))
    expect("gif_interlaced.gif", np.concatenate([colours[tall], np.full((20, W, 1), 255, np.uint8)], 2))

if __name__ == "__main__":
    main()

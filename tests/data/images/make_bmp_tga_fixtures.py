"""Writes the BMP and TGA fixtures tests/test_images_bmp_tga.cpp reads, with Pillow's writers (an
encoder that shares nothing with kiln's decoders). Every image is 7 x 5 pixels (an odd width, so
BMP rows are padded) and every value comes from a formula the test recomputes:

    value(x, y, c) = (x * 37 + y * 91 + c * 53) % 256         raw images
    block(x, y, c) = ((x // 3) * 37 + y * 91 + c * 53) % 256  run-length coded images (runs of 3)
    index(x, y)    = (x + 2 * y) % 6                          palette images: colour index(x, y)
    colour(k, c)   = (k * 40 + c * 90 + 10) % 256             channel c of palette colour k
    bit(x, y)      = (x + y) % 3 == 0                         1-bit image: white where true

Run with python3 and Pillow:

    python3 tests/data/images/make_bmp_tga_fixtures.py tests/data/images
"""
import os
import sys

from PIL import Image

WIDTH, HEIGHT = 7, 5


def value(x, y, c):
    return (x * 37 + y * 91 + c * 53) % 256


def block(x, y, c):
    return ((x // 3) * 37 + y * 91 + c * 53) % 256


def index(x, y):
    return (x + 2 * y) % 6


def colour(k, c):
    return (k * 40 + c * 90 + 10) % 256


def image(mode, channels, formula):
    im = Image.new(mode, (WIDTH, HEIGHT))
    for y in range(HEIGHT):
        for x in range(WIDTH):
            pixel = tuple(formula(x, y, c) for c in range(channels))
            im.putpixel((x, y), pixel[0] if channels == 1 else pixel)
    return im


def palette_image():
    im = Image.new("P", (WIDTH, HEIGHT))
    im.putpalette([colour(k, c) for k in range(6) for c in range(3)])
    for y in range(HEIGHT):
        for x in range(WIDTH):
            im.putpixel((x, y), index(x, y))
    return im


def main(out_dir):
    def save(im, name, **options):
        im.save(os.path.join(out_dir, name), **options)

    # BMP: 24-bit BGR, 32-bit BGRA (uncompressed, the fourth byte alpha), 8-bit palette, 8-bit
    # grey (a palette of 256 greys), 1-bit.
    save(image("RGB", 3, value), "bmp_rgb24.bmp")
    save(image("RGBA", 4, value), "bmp_rgba32.bmp")
    save(palette_image(), "bmp_pal8.bmp")
    save(image("L", 1, value), "bmp_grey8.bmp")
    one_bit = Image.new("1", (WIDTH, HEIGHT))
    for y in range(HEIGHT):
        for x in range(WIDTH):
            one_bit.putpixel((x, y), 255 if (x + y) % 3 == 0 else 0)
    save(one_bit, "bmp_1bit.bmp")

    # TGA: raw BGR from the bottom row with an image ID; run-length BGRA from the top row; raw
    # grey; run-length grey+alpha; colour-mapped raw and run-length (24-bit map entries).
    save(image("RGB", 3, value), "tga_rgb.tga", id_section=b"kiln")
    save(image("RGBA", 4, block), "tga_rgba_rle.tga", rle=True, orientation=1)
    save(image("L", 1, value), "tga_grey.tga")
    save(image("LA", 2, block), "tga_grey_alpha_rle.tga", rle=True)
    save(palette_image(), "tga_pal.tga")
    save(palette_image(), "tga_pal_rle.tga", rle=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))

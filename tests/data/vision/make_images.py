#!/usr/bin/python3
"""Writes the small test images of tests/vision/image_decode_test.cc and, for each,
<name>.rgb: the RGB bytes vLLM would hand the HF processor (PIL decode, then
vllm.multimodal.image.convert_image_mode(img, "RGB"): RGBA is pasted onto white
with its alpha as mask, every other mode is img.convert("RGB")).
Run with Debian's python3-pil: /usr/bin/python3 make_images.py"""
from PIL import Image
import io, os

W, H = 23, 17

def pattern(mode):
    img = Image.new(mode, (W, H))
    px = img.load()
    for y in range(H):
        for x in range(W):
            r, g, b, a = (x * 11) % 256, (y * 15) % 256, (x * y * 7 + 30) % 256, (x * 37 + y * 19) % 256
            if mode == "RGB": px[x, y] = (r, g, b)
            elif mode == "RGBA": px[x, y] = (r, g, b, a)
            elif mode == "L": px[x, y] = r ^ g
            elif mode == "LA": px[x, y] = (r ^ g, a)
            elif mode == "I;16": px[x, y] = (x * 2741 + y * 1913) % 65536
            elif mode == "P": px[x, y] = (x + y * 3) % 16
    if mode == "P":
        pal = []
        for i in range(16): pal += [(i * 16) % 256, (255 - i * 13) % 256, (i * 57) % 256]
        img.putpalette(pal)
    return img

def to_rgb(img):
    if img.mode == "RGB": return img
    if img.mode == "RGBA":
        out = Image.new("RGB", img.size, (255, 255, 255))
        out.paste(img, mask=img.split()[3])
        return out
    return img.convert("RGB")

def save(name, img, fmt, **kw):
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    open(name, "wb").write(buf.getvalue())
    dec = Image.open(name)
    dec.load()
    open(name + ".rgb", "wb").write(to_rgb(dec).tobytes())

save("rgb.png", pattern("RGB"), "PNG")
save("rgba.png", pattern("RGBA"), "PNG")
save("grey.png", pattern("L"), "PNG")
save("la.png", pattern("LA"), "PNG")
save("palette.png", pattern("P"), "PNG", transparency=3)
save("baseline.jpg", pattern("RGB"), "JPEG", quality=90)
save("progressive.jpg", pattern("RGB"), "JPEG", quality=85, progressive=True)
save("grey.jpg", pattern("L"), "JPEG", quality=90)
save("rgb.webp", pattern("RGB"), "WEBP", lossless=True)
save("rgba.webp", pattern("RGBA"), "WEBP", lossless=True)
frames = [pattern("P"), pattern("P").rotate(90, expand=False)]
frames[0].save("anim.gif", save_all=True, append_images=frames[1:], duration=50, loop=0)
dec = Image.open("anim.gif"); dec.load()
open("anim.gif.rgb", "wb").write(to_rgb(dec).tobytes())
# a 16-bit grey PNG: PIL opens it as I;16, and its convert("RGB") clips to 255
# (recorded so the test documents the difference; qinfer keeps the high byte).
save("grey16.png", pattern("I;16"), "PNG")

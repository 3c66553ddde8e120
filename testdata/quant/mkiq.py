#!/usr/bin/python3
"""Make the IQ4_NL, IQ4_XS, IQ3_XXS and IQ3_S goldens of this directory.

Usage: mkiq.py LIBGGML_BASE_SO
  LIBGGML_BASE_SO: today's libggml-base.so (node-llama-cpp 3.22.1,
  bins/linux-x64/libggml-base.so of @node-llama-cpp/linux-x64).

Writes imatrix.f32 (256 float32 importance weights, the formula below) and,
for each type, TYPE.bin (ggml_quantize_chunk over rows.f32, no importance
matrix) and TYPE.imatrix.bin (the same with imatrix.f32 as the weights of
every row), after ggml_quantize_init(TYPE).
"""
import ctypes, math, struct, sys

TYPES = {"iq4_nl": 20, "iq4_xs": 23, "iq3_xxs": 18, "iq3_s": 21}
ROWS, COLS = 106, 256


def importance():
    # Positive weights spread over two decades, one sub-block of 32 zeros
    # (columns 64-95) and a few single zeros: the edges ggml must take.
    w = [0.05 + math.exp(3 * math.sin(0.37 * i + 1)) / 4 for i in range(COLS)]
    for i in list(range(64, 96)) + [3, 130, 200, 255]:
        w[i] = 0.0
    return struct.pack("<%df" % COLS, *w)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    lib.ggml_quantize_init.argtypes = [ctypes.c_int]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    rows = open("rows.f32", "rb").read()
    assert len(rows) == ROWS * COLS * 4
    qw = importance()
    open("imatrix.f32", "wb").write(qw)
    src = ctypes.create_string_buffer(rows, len(rows))
    w = ctypes.create_string_buffer(qw, len(qw))
    for name, code in TYPES.items():
        lib.ggml_quantize_init(code)
        size = lib.ggml_row_size(code, COLS) * ROWS
        for suffix, imat in ((".bin", None), (".imatrix.bin", w)):
            dst = ctypes.create_string_buffer(size)
            n = lib.ggml_quantize_chunk(code, src, dst, 0, ROWS, COLS, imat)
            assert n == size, (name, n, size)
            open(name + suffix, "wb").write(dst.raw)


main()

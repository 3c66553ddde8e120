#!/usr/bin/python3
"""Make the IQ2/IQ1 goldens of testdata/quant from today's ggml (see README.md).

usage: mkiqgold.py LIBGGML_BASE_SO  (run in testdata/quant)

Set 1, on rows.f32:

imatrix.f32: 512 importance weights, numpy default_rng(20261127).lognormal(0, 1)
as float32, entries 7 and 300 set to 0 (llama-imatrix writes 0 for a dead column).
Each NAME.w.bin: ggml_quantize_chunk over rows.f32 read as 53 rows of 512 values
with that imatrix; each NAME.bin (the types ggml quantizes without weights too):
the same with no imatrix.

Set 2, random: iqrand.f32 is 128 blocks of 256 values from numpy
default_rng(20261128): blocks 0-31 Laplace(0, 1); 32-63 Student t(3) times 1e-3;
64-95 N(0, 1) with 80% of the values set to 0; 96-127 uniform(-1, 1) with one value
per block times 50. iqrand.imatrix.f32 is 1024 weights lognormal(0, 2) from the
same generator. NAME.rand.w.bin and NAME.rand.bin: as set 1, rows of 1024 values.
"""
import ctypes, sys
import numpy as np

lib = ctypes.CDLL(sys.argv[1])
lib.ggml_quantize_init.argtypes = [ctypes.c_int]
lib.ggml_quantize_chunk.restype = ctypes.c_size_t
lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
lib.ggml_row_size.restype = ctypes.c_size_t
lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]

COLS = 512
x = np.fromfile("rows.f32", dtype="<f4").reshape(-1, COLS).copy()
qw = np.random.default_rng(20261127).lognormal(0.0, 1.0, COLS).astype("<f4")
qw[7] = 0
qw[300] = 0
qw.tofile("imatrix.f32")

types = {"iq2_xxs": (16, False), "iq2_xs": (17, False), "iq2_s": (22, True),
         "iq1_s": (19, False), "iq1_m": (29, True)}
for name, (code, unweighted) in types.items():
    lib.ggml_quantize_init(code)
    for w in ([qw, None] if unweighted else [qw]):
        out = ctypes.create_string_buffer(lib.ggml_row_size(code, COLS) * x.shape[0])
        n = lib.ggml_quantize_chunk(code, x.ctypes.data, out, 0, x.shape[0], COLS,
                                    None if w is None else w.ctypes.data)
        fn = name + (".w.bin" if w is not None else ".bin")
        open(fn, "wb").write(out.raw[:n])
        print(fn, n)

rng = np.random.default_rng(20261128)
blocks = [rng.laplace(0, 1, (32, 256)),
          rng.standard_t(3, (32, 256)) * 1e-3,
          rng.standard_normal((32, 256)) * (rng.random((32, 256)) >= 0.8),
          rng.uniform(-1, 1, (32, 256))]
for b in blocks[3]:
    b[rng.integers(256)] *= 50
xr = np.concatenate(blocks).astype("<f4")
xr.tofile("iqrand.f32")
COLS = 1024
xr = xr.reshape(-1, COLS).copy()
qr = rng.lognormal(0.0, 2.0, COLS).astype("<f4")
qr.tofile("iqrand.imatrix.f32")
for name, (code, unweighted) in types.items():
    for w in ([qr, None] if unweighted else [qr]):
        out = ctypes.create_string_buffer(lib.ggml_row_size(code, COLS) * xr.shape[0])
        n = lib.ggml_quantize_chunk(code, xr.ctypes.data, out, 0, xr.shape[0], COLS,
                                    None if w is None else w.ctypes.data)
        fn = name + (".rand.w.bin" if w is not None else ".rand.bin")
        open(fn, "wb").write(out.raw[:n])
        print(fn, n)

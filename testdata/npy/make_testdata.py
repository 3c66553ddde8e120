# Writes the .npy/.npz test files in this directory with NumPy.
# Run from this directory:  /usr/bin/python3 make_testdata.py
# Values follow simple formulas so tests can recompute them (see README.md).
import numpy as np

def vals(descr, shape):
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n)
    kind = np.dtype(descr).kind
    if kind == 'f':
        v = (i - 2.5) * 0.75
    elif kind == 'i':
        v = i * 3 - 5
    elif kind == 'u':
        v = i * 3 + 1
    else:
        v = i % 3 == 0
    return v.astype(descr).reshape(shape)

plain = [
    ('f4_le', '<f4', (2, 3)), ('f4_be', '>f4', (2, 3)),
    ('f8_le', '<f8', (4,)), ('f8_be', '>f8', (4,)),
    ('f2_le', '<f2', (5,)), ('f2_be', '>f2', (5,)),
    ('i1', '|i1', (3, 4)), ('u1', '|u1', (3, 4)), ('b1', '|b1', (7,)),
    ('i2_be', '>i2', (3, 2)), ('u2_le', '<u2', (3, 2)),
    ('i4_be', '>i4', (2, 2, 2)), ('u4_be', '>u4', (6,)),
    ('i8_le', '<i8', (1, 5)), ('u8_be', '>u8', (2, 3)),
    ('scalar_f8', '<f8', ()), ('empty_f4', '<f4', (0, 3)),
]
for name, descr, shape in plain:
    np.save(name + '.npy', vals(descr, shape))

with open('swap_u8_be.npy', 'wb') as f:
    np.save(f, np.array([0x0102030405060708, 0xF0E0D0C0B0A09080], dtype='>u8'))

for major in (2, 3):
    with open('v%d_i4_be.npy' % major, 'wb') as f:
        np.lib.format.write_array(f, vals('>i4', (2, 3)), version=(major, 0))

# Arrays apr refuses, each with a specific error.
np.save('fortran_f4.npy', np.asfortranarray(vals('<f4', (2, 3))))
np.save('fortran_1d_f4.npy', np.asfortranarray(vals('<f4', (4, 1))))  # same bytes as C order: accepted
np.save('complex_c8.npy', np.arange(3, dtype='<c8'))
np.save('unicode_U3.npy', np.array(['ab', 'cde']))
np.save('object.npy', np.array([1, 'x'], dtype=object), allow_pickle=True)
np.save('structured.npy', np.zeros(2, dtype=[('a', '<i4'), ('b', '<f8')]))

np.savez('arrays.npz', weight=vals('<f4', (2, 3)), bias=vals('>f8', (3,)),
         **{'layer0/mask': vals('|b1', (4,))})
np.savez_compressed('arrays_deflate.npz', weight=vals('<f4', (2, 3)), ids=vals('>i8', (5,)))

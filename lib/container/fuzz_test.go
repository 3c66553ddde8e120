package container

import (
	"bytes"
	"io"
	"testing"
)

// seeds are small valid files in every encoding, so the fuzzer starts from real structure.
func seeds(f *testing.F) {
	tensors := sampleTensors()[1:]
	for _, name := range []string{"none", "zstd", "lz4-shuffle"} {
		f.Add(build(f, tensors, codecOptions[name]...))
	}
	f.Add(buildTable(f, tensors, codecOptions["zstd"]...))
}

// FuzzReader feeds arbitrary bytes to the streaming reader: it must return data or a
// typed error, never panic or hang.
func FuzzReader(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), WithReadWorkers(2))
		if err != nil {
			return
		}
		defer r.Close()
		for {
			tt, err := r.Next()
			if err != nil {
				return
			}
			io.Copy(io.Discard, tt)
		}
	})
}

// FuzzFile feeds arbitrary bytes to the random-access reader and checks that whatever it
// accepts, the streaming reader accepts too, with the same tensors.
func FuzzFile(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := NewFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for _, e := range file.Entries() {
			file.TensorBytes(e.Name)
		}
		if file.Verify() != nil {
			return
		}
		_, got, _, err := readStream(b)
		if err != nil {
			t.Fatalf("File.Verify accepted what the streaming reader refuses: %v", err)
		}
		for _, e := range file.Entries() {
			data, err := file.TensorBytes(e.Name)
			if err != nil || !bytes.Equal(data, got[e.Name]) {
				t.Fatalf("tensor %q differs between readers (%v)", e.Name, err)
			}
		}
	})
}

// FuzzMetadata checks the MessagePack pre-check and decoder on arbitrary bytes, and
// that accepted metadata re-encodes to bytes that decode to the same keys.
func FuzzMetadata(f *testing.F) {
	m := sampleMeta()
	b, _ := m.Encode()
	f.Add(b)
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := DecodeMetadata(b)
		if err != nil {
			return
		}
		again, err := md.Encode()
		if err != nil {
			return // e.g. values msgpack can decode but not re-encode
		}
		md2, err := DecodeMetadata(again)
		if err != nil {
			t.Fatalf("re-encoded metadata does not decode: %v", err)
		}
		if len(md2.Keys()) != len(md.Keys()) {
			t.Fatalf("keys %v became %v", md.Keys(), md2.Keys())
		}
	})
}

package container

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestOtherFormatNamed feeds the readers the first bytes of other formats, whole and
// cut short of an APR header: the error names the format and the program that reads
// it, from a stream and from a file alike.
func TestOtherFormatNamed(t *testing.T) {
	long := func(prefix string) []byte { return append([]byte(prefix), make([]byte, 200)...) }
	st := append([]byte{40, 0, 0, 0, 0, 0, 0, 0}, `{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`...)
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"GGUF", long("GGUF\x03\x00\x00\x00"), "GGUF file: apr-gguf import"},
		{"GGUF short", []byte("GGUF"), "GGUF file: apr-gguf import"},
		{"GGUF 50 bytes", long("GGUF")[:50], "GGUF file: apr-gguf import"},
		{"SafeTensors", st, "SafeTensors file: apr-st import"},
		{"npy", long("\x93NUMPY\x01\x00"), "NumPy .npy file"},
		{"npz", long("PK\x03\x04"), "zip file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("stream: %v, want an error containing %q", err, c.want)
			}
			_, err = NewFile(bytes.NewReader(c.in), int64(len(c.in)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("file: %v, want an error containing %q", err, c.want)
			}
		})
	}
	// Another major version, cut short, is a version error, not "truncated".
	var ve *VersionError
	if _, err := NewReader(bytes.NewReader([]byte("APRN\x03\x00"))); !errors.As(err, &ve) {
		t.Errorf("short header of version 3: %v, want a VersionError", err)
	}
}

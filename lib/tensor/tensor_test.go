package tensor

import (
	"errors"
	"testing"
)

func TestWrapNamesTheTensorOnce(t *testing.T) {
	base := errors.New("tensor data is encrypted")
	once := Wrap("w", base)
	if got, want := once.Error(), `tensor "w": tensor data is encrypted`; got != want {
		t.Fatalf("Wrap = %q, want %q", got, want)
	}
	if got := Wrap("w", once).Error(); got != once.Error() {
		t.Errorf("wrapping again gave %q, want %q unchanged", got, once.Error())
	}
	if got, want := Wrap("v", once).Error(), `tensor "v": tensor "w": tensor data is encrypted`; got != want {
		t.Errorf("another tensor's name: %q, want %q", got, want)
	}
	if !errors.Is(Wrap("v", once), base) {
		t.Error("Wrap lost the wrapped error")
	}
	if Wrap("w", nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
}

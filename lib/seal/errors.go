package seal

import (
	"errors"
	"fmt"
)

// ErrDecryptionFailed is wrapped by every error that means "this key,
// password or ciphertext does not open": a wrong identity or password, a key
// commitment mismatch, a chunk whose tag does not verify, a missing, extra,
// reordered or truncated chunk, a header MAC mismatch.
var ErrDecryptionFailed = errors.New("seal: decryption failed")

// Specific causes, each wrapped together with ErrDecryptionFailed.
var (
	// ErrCommitment: the key commitment in the stream header does not match
	// the file key (wrong key, or a corrupted stream header).
	ErrCommitment = errors.New("key commitment mismatch")
	// ErrAuthentication: a chunk's AES-GCM tag does not verify (corrupted,
	// reordered, duplicated or substituted chunk, or wrong key).
	ErrAuthentication = errors.New("chunk authentication failed")
	// ErrMissingFinal: the stream ended without its final chunk (truncation).
	ErrMissingFinal = errors.New("stream ended without its final chunk")
	// ErrDataAfterFinal: a chunk came after the final chunk (trailing data,
	// two final chunks).
	ErrDataAfterFinal = errors.New("data after the final chunk")
	// ErrChunkOrder: a chunk index other than the expected next one.
	ErrChunkOrder = errors.New("chunk out of order")
	// ErrTruncatedChunk: a ciphertext chunk shorter than the AES-GCM tag.
	ErrTruncatedChunk = errors.New("chunk shorter than its tag")
	// ErrNoIdentityMatched: none of the identities could unwrap any stanza.
	ErrNoIdentityMatched = errors.New("no identity matched any recipient stanza")
	// ErrHeaderMAC: the header MAC does not match.
	ErrHeaderMAC = errors.New("header MAC mismatch")
)

// ErrMalformed is wrapped by errors about structurally invalid input:
// unparsable stanzas, key strings or stream headers.
var ErrMalformed = errors.New("seal: malformed input")

// ErrParamsOutOfRange is wrapped when a parameter (Argon2id time, memory or
// threads, chunk size, chunk count) is outside the allowed range. Parameters
// read from a file are checked against caps before any work is done.
var ErrParamsOutOfRange = errors.New("seal: parameter out of range")

func decryptErr(cause error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrDecryptionFailed, cause, fmt.Sprintf(format, args...))
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func outOfRange(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrParamsOutOfRange, fmt.Sprintf(format, args...))
}

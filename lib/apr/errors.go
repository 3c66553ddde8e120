package apr

import (
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sign"
)

// The error table of the .apr case study. Branch on them with errors.Is / errors.As.
type (
	// ChecksumMismatch carries the expected (stored) and actual (computed) CRC32.
	ChecksumMismatch = container.ChecksumError
	// ModelTypeMismatch is returned by Load when the file holds another model type.
	ModelTypeMismatch = container.TypeMismatchError
	// UnsupportedVersion carries the version found and the versions supported.
	UnsupportedVersion = container.VersionError
	// FormatError says where a file breaks the format.
	FormatError = container.FormatError
)

var (
	// ErrChecksumMismatch matches every *ChecksumMismatch.
	ErrChecksumMismatch = container.ErrChecksum
	// ErrUnsupportedVersion matches every *UnsupportedVersion.
	ErrUnsupportedVersion = container.ErrVersion
	// ErrFormat matches every *FormatError.
	ErrFormat = container.ErrFormat
	// ErrModelTypeMismatch matches every *ModelTypeMismatch.
	ErrModelTypeMismatch = container.ErrTypeMismatch
	// ErrSignatureInvalid: no valid signature from a trusted key.
	ErrSignatureInvalid = sign.ErrSignatureInvalid
	// ErrDecryptionFailed: wrong key or password, or tampered sealed data. It is
	// seal.ErrDecryptionFailed, so errors.Is works with either.
	ErrDecryptionFailed = seal.ErrDecryptionFailed
)

package sign

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions return errors that wrap one of these (test
// with errors.Is) and add detail.
var (
	// ErrSignatureInvalid: the signature does not verify with any trusted
	// key, or was made by a key that is not trusted.
	ErrSignatureInvalid = errors.New("sign: signature invalid")
	// ErrUntrustedKey: the signature names a key id that is not in the
	// trusted list (also wraps ErrSignatureInvalid).
	ErrUntrustedKey = errors.New("signing key is not trusted")
	// ErrMalformed: a key file, signature or license block cannot be parsed.
	ErrMalformed = errors.New("sign: malformed input")
	// ErrUnsupportedKey: a well-formed key of a kind we do not handle (not
	// Ed25519, encrypted PKCS#8, unknown KDF).
	ErrUnsupportedKey = errors.New("sign: unsupported key")
	// ErrPassphraseRequired: the private key is encrypted and no passphrase
	// was given.
	ErrPassphraseRequired = errors.New("sign: private key is encrypted: passphrase required")
	// ErrWrongPassphrase: the passphrase does not decrypt the private key.
	ErrWrongPassphrase = errors.New("sign: wrong passphrase for private key")
	// ErrParamsOutOfRange: a KDF parameter read from a key file is beyond the
	// caps.
	ErrParamsOutOfRange = errors.New("sign: parameter out of range")
	// ErrLicenseExpired: the license's expiry time has passed.
	ErrLicenseExpired = errors.New("sign: license expired")
	// ErrLicenseNotYetValid: the license's issue time is in the future.
	ErrLicenseNotYetValid = errors.New("sign: license not yet valid")
	// ErrLicenseUnknownIssuer: no trusted issuer key matches the license.
	ErrLicenseUnknownIssuer = errors.New("sign: license issuer is not trusted")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

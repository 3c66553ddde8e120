package seal

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// Argon2idStanzaType is the stanza type of password recipients.
const Argon2idStanzaType = "argon2id"

// argon2SaltLabel is prepended to the random salt (domain separation).
const argon2SaltLabel = "github.com/apr-go/apr/seal/argon2id@v1"

// Argon2SaltSize is the size of the random Argon2id salt in the stanza.
const Argon2SaltSize = 16

// Argon2Params are Argon2id cost parameters.
type Argon2Params struct {
	Time      uint32 // passes over memory, >= 1
	MemoryKiB uint32 // memory in KiB, >= 8*Threads
	Threads   uint8  // lanes, >= 1
}

// DefaultArgon2Params is RFC 9106's second recommended option: t=3,
// m=64 MiB, p=4.
var DefaultArgon2Params = Argon2Params{Time: 3, MemoryKiB: 64 * 1024, Threads: 4}

// Argon2Limits cap the Argon2id parameters that will be honoured. A hostile
// file can otherwise ask for terabytes of memory or years of work.
type Argon2Limits struct {
	MaxTime      uint32
	MaxMemoryKiB uint32
	MaxThreads   uint8
	// MaxCost caps Time*MemoryKiB (KiB passes), so that the maximum time and
	// the maximum memory cannot both be demanded at once.
	MaxCost uint64
}

// DefaultArgon2Limits: t <= 10, m <= 256 MiB, p <= 8, t*m <= 1 GiB passes: four
// times the memory and about five times the work of the defaults at most, so that a
// hostile header cannot make a small machine (a CI runner, a container under ulimit)
// spend a gigabyte and seconds before a wrong passphrase is known. A file apr writes
// never needs more (the writer refuses parameters above these). Parameters above them
// are rejected before any hashing, with an error wrapping ErrParamsOutOfRange.
var DefaultArgon2Limits = Argon2Limits{MaxTime: 10, MaxMemoryKiB: 256 << 10, MaxThreads: 8, MaxCost: 1 << 20}

// Check reports whether p is valid and within lim (zero lim means
// DefaultArgon2Limits).
func (p Argon2Params) Check(lim Argon2Limits) error {
	if lim == (Argon2Limits{}) {
		lim = DefaultArgon2Limits
	}
	switch {
	case p.Time < 1:
		return outOfRange("argon2id time %d < 1", p.Time)
	case p.Threads < 1:
		return outOfRange("argon2id threads %d < 1", p.Threads)
	case p.MemoryKiB < 8*uint32(p.Threads):
		return outOfRange("argon2id memory %d KiB < 8 KiB per thread", p.MemoryKiB)
	case p.Time > lim.MaxTime:
		return outOfRange("argon2id time %d exceeds the cap %d", p.Time, lim.MaxTime)
	case p.MemoryKiB > lim.MaxMemoryKiB:
		return outOfRange("argon2id memory %d KiB exceeds the cap %d KiB", p.MemoryKiB, lim.MaxMemoryKiB)
	case p.Threads > lim.MaxThreads:
		return outOfRange("argon2id threads %d exceed the cap %d", p.Threads, lim.MaxThreads)
	case uint64(p.Time)*uint64(p.MemoryKiB) > lim.MaxCost:
		return outOfRange("argon2id cost t*m = %d KiB passes exceeds the cap %d", uint64(p.Time)*uint64(p.MemoryKiB), lim.MaxCost)
	}
	return nil
}

// encoding of the params argument: time u32 BE || memory KiB u32 BE || threads u8.
func (p Argon2Params) marshal() []byte {
	b := binary.BigEndian.AppendUint32(nil, p.Time)
	b = binary.BigEndian.AppendUint32(b, p.MemoryKiB)
	return append(b, p.Threads)
}

func parseArgon2Params(b []byte) (Argon2Params, bool) {
	if len(b) != 9 {
		return Argon2Params{}, false
	}
	return Argon2Params{
		Time:      binary.BigEndian.Uint32(b[0:4]),
		MemoryKiB: binary.BigEndian.Uint32(b[4:8]),
		Threads:   b[8],
	}, true
}

func argon2WrapKey(password, salt []byte, p Argon2Params) []byte {
	s := make([]byte, 0, len(argon2SaltLabel)+len(salt))
	s = append(s, argon2SaltLabel...)
	s = append(s, salt...)
	return argon2.IDKey(password, s, p.Time, p.MemoryKiB, p.Threads, chacha20poly1305.KeySize)
}

// PasswordRecipient wraps a file key under a password with Argon2id.
//
// Stanza: {Type: "argon2id", Args: [salt (16 random bytes), params (9
// bytes: time u32 BE, memory KiB u32 BE, threads u8)], Body:
// ChaCha20-Poly1305(key, zero nonce, file key)} where key =
// Argon2id(password, "github.com/apr-go/apr/seal/argon2id@v1" || salt,
// params, 32 bytes). A file holds at most one such stanza.
type PasswordRecipient struct {
	password []byte
	params   Argon2Params
}

// NewPasswordRecipient returns a recipient for password with the given
// parameters (use DefaultArgon2Params); parameters beyond
// DefaultArgon2Limits are refused, so every file we write can be opened.
func NewPasswordRecipient(password []byte, params Argon2Params) (*PasswordRecipient, error) {
	if len(password) == 0 {
		return nil, errors.New("seal: empty password")
	}
	if err := params.Check(DefaultArgon2Limits); err != nil {
		return nil, err
	}
	return &PasswordRecipient{password: append([]byte{}, password...), params: params}, nil
}

// Wrap implements Recipient.
func (r *PasswordRecipient) Wrap(fileKey []byte) ([]Stanza, error) {
	salt := make([]byte, Argon2SaltSize)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("seal: random salt: %w", err)
	}
	k := argon2WrapKey(r.password, salt, r.params)
	body, err := aeadWrap(k, fileKey)
	clear(k)
	if err != nil {
		return nil, err
	}
	return []Stanza{{Type: Argon2idStanzaType, Args: [][]byte{salt, r.params.marshal()}, Body: body}}, nil
}

// PasswordIdentity unwraps a file key sealed for a password.
type PasswordIdentity struct {
	password []byte
	// Limits caps the parameters read from the file; the zero value means
	// DefaultArgon2Limits.
	Limits Argon2Limits
}

// NewPasswordIdentity returns an identity for password with
// DefaultArgon2Limits.
func NewPasswordIdentity(password []byte) *PasswordIdentity {
	return &PasswordIdentity{password: append([]byte{}, password...)}
}

// Unwrap implements Identity. The stanza's parameters are checked against
// the limits before Argon2id runs. A wrong password gives an error wrapping
// ErrDecryptionFailed; more than one argon2id stanza is malformed.
func (i *PasswordIdentity) Unwrap(stanzas []Stanza) ([]byte, error) {
	var found *Stanza
	for n := range stanzas {
		if stanzas[n].Type != Argon2idStanzaType {
			continue
		}
		if found != nil {
			return nil, malformed("more than one argon2id stanza")
		}
		found = &stanzas[n]
	}
	if found == nil {
		return nil, decryptErr(ErrNoIdentityMatched, "no argon2id (password) stanza")
	}
	if len(found.Args) != 2 || len(found.Args[0]) != Argon2SaltSize {
		return nil, malformed("argon2id stanza: want a %d-byte salt and a params argument", Argon2SaltSize)
	}
	params, ok := parseArgon2Params(found.Args[1])
	if !ok {
		return nil, malformed("argon2id stanza: params argument must be 9 bytes")
	}
	if len(found.Body) != FileKeySize+chacha20poly1305.Overhead {
		return nil, malformed("argon2id stanza: body of %d bytes, want %d", len(found.Body), FileKeySize+chacha20poly1305.Overhead)
	}
	if err := params.Check(i.Limits); err != nil {
		return nil, fmt.Errorf("argon2id stanza: %w", err)
	}
	k := argon2WrapKey(i.password, found.Args[0], params)
	key, ok := aeadUnwrap(k, found.Body)
	clear(k)
	if !ok {
		return nil, decryptErr(ErrNoIdentityMatched, "wrong password")
	}
	return key, nil
}

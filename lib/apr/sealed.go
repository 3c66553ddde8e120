package apr

import (
	"errors"
	"io"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/model"
	"github.com/apr-go/apr/lib/modelfile"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
	"github.com/apr-go/apr/lib/sealed"
	"github.com/apr-go/apr/lib/stream"
)

// Sealed streams are lib/sealed; these are its names in the façade, and the
// model-level functions built on it.

// SealInfo is what a seal section says without opening it (sealed.Info).
type SealInfo = sealed.Info

// ErrNotSealed is returned when a sealed file was expected (sealed.ErrNotSealed).
var ErrNotSealed = sealed.ErrNotSealed

// NewSealer is sealed.NewSealer: a container.Sealer for the recipients under a new
// random file key.
func NewSealer(recipients ...seal.Recipient) (container.Sealer, error) {
	return sealed.NewSealer(recipients...)
}

// NewUnsealer is sealed.NewUnsealer: a container.Unsealer trying each identity.
func NewUnsealer(identities ...seal.Identity) container.Unsealer {
	return sealed.NewUnsealer(identities...)
}

// ParseSealInfo is sealed.ParseInfo.
func ParseSealInfo(section []byte) (*SealInfo, error) { return sealed.ParseInfo(section) }

// SealStream is sealed.Seal: src's tensors as a sealed APR v2 stream for the
// recipients, carrying src's signature and license blocks.
func SealStream(dst io.Writer, src Stream, recipients []seal.Recipient, opts ...container.Option) error {
	return sealed.Seal(dst, src, recipients, opts...)
}

// OpenSealedStream is sealed.Open: a sealed APR v2 stream decrypted with the first
// identity that opens it.
func OpenSealedStream(r io.Reader, identities ...seal.Identity) (Stream, error) {
	return sealed.Open(r, identities...)
}

// OpenSealedStreamWith is sealed.OpenWith, OpenSealedStream with any
// container.Unsealer.
func OpenSealedStreamWith(r io.Reader, u container.Unsealer) (Stream, error) {
	return sealed.OpenWith(r, u)
}

// EncodeSealed writes m as a sealed APR v2 stream for the recipients.
func EncodeSealed(w io.Writer, m model.Model, opts SaveOptions, recipients ...seal.Recipient) error {
	s, err := modelfile.Stream(m, opts)
	if err != nil {
		return err
	}
	return SealStream(w, s, recipients, container.WithCompression(opts.Compression), container.WithShuffle(opts.Shuffle))
}

// SaveEncrypted writes m to path sealed for password (Argon2id with
// seal.DefaultArgon2Params: t=3, 64 MiB, p=4), atomically.
func SaveEncrypted(path string, m model.Model, password []byte, opts SaveOptions) error {
	if len(password) == 0 {
		return errors.New("empty password")
	}
	r, err := seal.NewPasswordRecipient(password, seal.DefaultArgon2Params)
	if err != nil {
		return err
	}
	return saveSealed(path, m, opts, r)
}

// SaveForRecipient writes m to path sealed for one or more X25519 recipients
// (seal.ParseX25519Recipient reads age's "age1..." strings), atomically.
func SaveForRecipient(path string, m model.Model, opts SaveOptions, recipients ...*seal.X25519Recipient) error {
	rs := make([]seal.Recipient, 0, len(recipients))
	for _, r := range recipients {
		if r == nil {
			return errors.New("nil recipient")
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return errors.New("SaveForRecipient needs at least one recipient")
	}
	return saveSealed(path, m, opts, rs...)
}

func saveSealed(path string, m model.Model, opts SaveOptions, rs ...seal.Recipient) error {
	return saveFile(path, func(w io.Writer) error { return EncodeSealed(w, m, opts, rs...) })
}

// LoadEncrypted reads a model sealed for a password and checks its type, as Load.
// A wrong password, or a file changed after sealing, is an error wrapping
// ErrDecryptionFailed; the model is returned only after every byte of the file
// verified.
func LoadEncrypted[M model.Model](path string, want modeltype.Type, password []byte) (M, error) {
	return loadSealed[M](path, want, seal.NewPasswordIdentity(password))
}

// LoadAsRecipient reads a model sealed for X25519 recipients with the matching
// identities (seal.ParseX25519Identities reads age-keygen's identity files), as
// LoadEncrypted.
func LoadAsRecipient[M model.Model](path string, want modeltype.Type, identities ...*seal.X25519Identity) (M, error) {
	ids := make([]seal.Identity, 0, len(identities))
	for _, id := range identities {
		if id != nil {
			ids = append(ids, id)
		}
	}
	return loadSealed[M](path, want, ids...)
}

func loadSealed[M model.Model](path string, want modeltype.Type, ids ...seal.Identity) (M, error) {
	return loadFile[M](path, want, func(r io.Reader) (model.Model, error) { return DecodeSealed(r, want, ids...) })
}

// DecodeSealed reads a sealed model from r with the identities and checks its type.
func DecodeSealed(r io.Reader, want modeltype.Type, identities ...seal.Identity) (model.Model, error) {
	s, err := OpenSealedStream(r, identities...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	h := s.Header()
	if err := accepting(want)(h.Type); err != nil {
		return nil, err
	}
	tensors, err := stream.ReadAll(s)
	if err != nil {
		return nil, err
	}
	return modelfile.FromTensors(h.Type, h.Metadata.ModelConfig, tensors)
}

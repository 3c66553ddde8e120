package oms

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

const (
	// BundleMediaType is what model_signing and the spec write.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// MaxBundle bounds a bundle (model.sig) apr reads or writes. model_signing's are a
	// few KB: a resource takes about 200 bytes of the bundle (its statement line, in
	// base64), so 16 MiB is room for some 80,000 files or shards (an 80 TB model in
	// the spec's 1 GB shards). A bigger file is refused before it is parsed, so a
	// hostile one costs at most this much memory.
	MaxBundle = 16 << 20
)

// ErrKeyless is returned when a key or certificate verifier is given a Sigstore
// keyless bundle (a Fulcio certificate and a Rekor entry), which Keyless checks.
var ErrKeyless = errors.New("a Sigstore keyless signature (Fulcio certificate, Rekor entry): verify it with 'oms verify sigstore --trust-config TRUSTED_ROOT.json --identity ID --identity-provider URL'")

// PAE is DSSE's pre-authentication encoding, what the signature covers.
func PAE(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "DSSEv1 %d %s %d ", len(payloadType), payloadType, len(payload))
	b.Write(payload)
	return b.Bytes()
}

// paeV02 is the encoding model_signing v0.2.0 signed by mistake: "DSSEV1", and the
// payload as Python prints a bytes object (b'...' with escapes). Verified only.
func paeV02(payload []byte) []byte {
	return fmt.Appendf(nil, "DSSEV1 %d %s %d %s", len(PayloadType), PayloadType, len(payload), pyBytesRepr(payload))
}

// pyBytesRepr is Python's repr() of a bytes object.
func pyBytesRepr(p []byte) string {
	quote := byte('\'')
	if bytes.IndexByte(p, '\'') >= 0 && bytes.IndexByte(p, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte('b')
	b.WriteByte(quote)
	for _, c := range p {
		switch {
		case c == quote || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// Bundle is a parsed Sigstore bundle holding a DSSE envelope.
type Bundle struct {
	MediaType string
	// Exactly one of these is set: the key method's key identifier, the certificate
	// method's chain (DER, leaf first), or a keyless bundle's Fulcio certificate.
	KeyHint     string // hex SHA-256 of the PEM public key (publicKey.hint)
	KeyRaw      []byte // publicKey.rawBytes of bundles before model_signing v1.1.0
	KeyMaterial bool   // publicKey present
	Chain       [][]byte
	Keyless     []byte
	TlogEntries int
	// The envelope.
	PayloadType string
	Payload     []byte
	Signatures  [][]byte
}

type bundleIn struct {
	MediaType            *string `json:"mediaType"`
	VerificationMaterial *struct {
		PublicKey *struct {
			Hint     *string `json:"hint"`
			RawBytes *string `json:"rawBytes"`
		} `json:"publicKey"`
		X509CertificateChain *struct {
			Certificates []struct {
				RawBytes string `json:"rawBytes"`
			} `json:"certificates"`
		} `json:"x509CertificateChain"`
		Certificate *struct {
			RawBytes string `json:"rawBytes"`
		} `json:"certificate"`
		TlogEntries []json.RawMessage `json:"tlogEntries"`
	} `json:"verificationMaterial"`
	DSSEEnvelope *struct {
		Payload     *string `json:"payload"`
		PayloadType *string `json:"payloadType"`
		Signatures  []struct {
			Sig   *string `json:"sig"`
			KeyID *string `json:"keyid"`
		} `json:"signatures"`
	} `json:"dsseEnvelope"`
	MessageSignature json.RawMessage `json:"messageSignature"`
}

// ParseBundle reads an OMS bundle and checks its structure: a Sigstore bundle
// media type, one kind of verification material, a DSSE envelope with an in-toto
// payload and at least one signature. It checks no signature.
func ParseBundle(data []byte) (*Bundle, error) {
	if len(data) > MaxBundle {
		return nil, fmt.Errorf("bundle: %d bytes, more than the %d accepted", len(data), MaxBundle)
	}
	var in bundleIn
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&in); err != nil {
		return nil, fmt.Errorf("bundle: not a JSON object: %w", err)
	}
	if d.More() {
		return nil, errors.New("bundle: data after the JSON object")
	}
	if in.MediaType == nil {
		return nil, errors.New("bundle: no mediaType")
	}
	if !knownMediaType(*in.MediaType) {
		return nil, fmt.Errorf("bundle: mediaType %q is not a Sigstore bundle v0.1-v0.3 (expected %q)", *in.MediaType, BundleMediaType)
	}
	b := &Bundle{MediaType: *in.MediaType}
	vm := in.VerificationMaterial
	if vm == nil {
		return nil, errors.New("bundle: no verificationMaterial")
	}
	b.TlogEntries = len(vm.TlogEntries)
	kinds := 0
	if pk := vm.PublicKey; pk != nil {
		kinds++
		b.KeyMaterial = true
		if pk.Hint != nil {
			b.KeyHint = *pk.Hint
		}
		if pk.RawBytes != nil {
			raw, err := decodeB64(*pk.RawBytes)
			if err != nil {
				return nil, fmt.Errorf("bundle: publicKey.rawBytes: %w", err)
			}
			b.KeyRaw = raw
		}
		if b.KeyHint == "" && b.KeyRaw == nil {
			return nil, errors.New("bundle: publicKey has neither hint nor rawBytes")
		}
	}
	if ch := vm.X509CertificateChain; ch != nil {
		kinds++
		if len(ch.Certificates) == 0 {
			return nil, errors.New("bundle: x509CertificateChain has no certificates")
		}
		for i, c := range ch.Certificates {
			der, err := decodeB64(c.RawBytes)
			if err != nil || len(der) == 0 {
				return nil, fmt.Errorf("bundle: certificate %d of x509CertificateChain: not base64 DER", i)
			}
			b.Chain = append(b.Chain, der)
		}
	}
	if c := vm.Certificate; c != nil {
		kinds++
		der, err := decodeB64(c.RawBytes)
		if err != nil || len(der) == 0 {
			return nil, errors.New("bundle: verificationMaterial.certificate: not base64 DER")
		}
		if b.TlogEntries == 0 {
			return nil, errors.New("bundle: a keyless (certificate) bundle needs tlogEntries, and it has none")
		}
		b.Keyless = der
	}
	if kinds != 1 {
		return nil, fmt.Errorf("bundle: verificationMaterial has %d of publicKey, x509CertificateChain and certificate; expected one", kinds)
	}
	env := in.DSSEEnvelope
	if env == nil {
		if in.MessageSignature != nil {
			return nil, errors.New("bundle: a message signature, not a DSSE envelope: not an OMS bundle")
		}
		return nil, errors.New("bundle: no dsseEnvelope")
	}
	if env.PayloadType == nil || *env.PayloadType != PayloadType {
		return nil, fmt.Errorf("bundle: payloadType is %s, expected %q", quoteOpt(env.PayloadType), PayloadType)
	}
	b.PayloadType = *env.PayloadType
	if env.Payload == nil || *env.Payload == "" {
		return nil, errors.New("bundle: empty DSSE payload")
	}
	payload, err := decodeB64(*env.Payload)
	if err != nil {
		return nil, fmt.Errorf("bundle: DSSE payload: %w", err)
	}
	b.Payload = payload
	if len(env.Signatures) == 0 {
		return nil, errors.New("bundle: the DSSE envelope has no signatures")
	}
	for i, s := range env.Signatures {
		if s.Sig == nil {
			return nil, fmt.Errorf("bundle: DSSE signature %d has no sig", i)
		}
		sig, err := decodeB64(*s.Sig)
		if err != nil || len(sig) == 0 {
			return nil, fmt.Errorf("bundle: DSSE signature %d: not base64", i)
		}
		b.Signatures = append(b.Signatures, sig)
	}
	return b, nil
}

func knownMediaType(t string) bool {
	for _, v := range []string{"0.1", "0.2", "0.3"} {
		if t == "application/vnd.dev.sigstore.bundle+json;version="+v || t == "application/vnd.dev.sigstore.bundle.v"+v+"+json" {
			return true
		}
	}
	return false
}

// decodeB64 takes base64 as protobuf's JSON mapping does: standard or URL
// alphabet, padded or not.
func decodeB64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("not base64 (%d characters)", len(s))
}

// bundle as written, in model_signing's field order.
type bundleOut struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial vmOut  `json:"verificationMaterial"`
	DSSEEnvelope         envOut `json:"dsseEnvelope"`
}

type vmOut struct {
	PublicKey *struct {
		Hint string `json:"hint"`
	} `json:"publicKey,omitempty"`
	X509CertificateChain *chainOut `json:"x509CertificateChain,omitempty"`
}

type chainOut struct {
	Certificates []certOut `json:"certificates"`
}

type certOut struct {
	RawBytes string `json:"rawBytes"`
}

type envOut struct {
	Payload     string   `json:"payload"`
	PayloadType string   `json:"payloadType"`
	Signatures  []sigOut `json:"signatures"`
}

type sigOut struct {
	Sig   string `json:"sig"`
	KeyID string `json:"keyid"`
}

func encodeBundle(vm vmOut, payload, sig []byte) ([]byte, error) {
	out := bundleOut{
		MediaType:            BundleMediaType,
		VerificationMaterial: vm,
		DSSEEnvelope: envOut{
			Payload:     base64.StdEncoding.EncodeToString(payload),
			PayloadType: PayloadType,
			Signatures:  []sigOut{{Sig: base64.StdEncoding.EncodeToString(sig)}},
		},
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	if len(b) >= MaxBundle {
		return nil, fmt.Errorf("the signature would be %d bytes, more than the %d bytes a verifier reads: sign fewer, larger shards (a larger --shard-size)", len(b)+1, MaxBundle)
	}
	return append(b, '\n'), nil
}

package predict

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/modeltype"
	"github.com/apr-go/apr/lib/seal"
)

// Private inference (docs/SEALING.md, "Private inference"): a user seals feature rows
// to the X25519 key a model publishes in its metadata; its owner decrypts them,
// predicts and seals the predictions back to the key named inside the request. Both
// are age files (lib/seal's CreateAge), so `age -d` opens a reply.
//
// A request's payload is a text header, then the features as the user gave them
// (CSV, .npy or .npz bytes):
//
//	apr-predict-request/v1
//	model: <ModelID, 64 hex digits>
//	reply-to: age1...
//	id: <16 random bytes, hex>
//	secret: <32 random bytes, hex>
//	time: <Unix seconds>
//	proba: true|false
//	format: auto|csv|npy|npz
//	<empty line>
//
// It is sealed to the model's recipient and to the reply-to key (so the requester can
// read it back to open the reply). A reply's payload is the predictions alone; its
// header carries, besides the X25519 stanza of the reply-to key, a stanza
// "apr-reply <tag>" where tag = HMAC-SHA-256(key = the request's secret, message =
// "apr-predict-reply/v1" 0x00 || id || model || the reply's file key): only someone who
// read the request can make it, and it holds for this reply's payload only.

// RecipientKey is the top-level metadata key of a model's inference recipient.
const RecipientKey = "inference_recipient"

const (
	requestMagic = "apr-predict-request/v1"
	replyDomain  = "apr-predict-reply/v1"
	replyStanza  = "apr-reply"
	// maxRequestHeader caps the text header of a request.
	maxRequestHeader = 4096
	// ClockSkew is how far in the future a request's time may be.
	ClockSkew = 5 * time.Minute
)

// Errors of private inference; each is wrapped with the details.
var (
	// ErrRequest: the request is not one this owner answers (another model, too old,
	// from the future, malformed header).
	ErrRequest = errors.New("request refused")
	// ErrReplay: the request's id was served before.
	ErrReplay = errors.New("request replayed")
	// ErrReply: the reply is not the answer to this request.
	ErrReply = errors.New("not the reply to this request")
)

// ModelID identifies a model for requests: SHA-256 of "apr-inference-model-v1" 0x00
// || u16 type || u64 metadata length || the metadata (deterministic MessagePack, as
// the signed manifest has it) || u32 tensor count || per tensor u16 name length ||
// name || u16 dtype || u8 dims || u64 each dim. Everything in it is readable in a
// sealed file and survives re-compression, sealing and signing; the tensors' bytes
// are not in it (a user may hold the model sealed, without the key that reads them).
func ModelID(t modeltype.Type, md *container.Metadata, tensors []container.TensorInfo) ([32]byte, error) {
	if md == nil {
		md = &container.Metadata{}
	}
	meta, err := md.Encode()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	b := append([]byte("apr-inference-model-v1"), 0)
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	b = binary.BigEndian.AppendUint64(b, uint64(len(meta)))
	h.Write(b)
	h.Write(meta)
	b = binary.BigEndian.AppendUint32(b[:0], uint32(len(tensors)))
	for _, ti := range tensors {
		b = binary.BigEndian.AppendUint16(b, uint16(len(ti.Name)))
		b = append(b, ti.Name...)
		b = binary.BigEndian.AppendUint16(b, uint16(ti.DType))
		b = append(b, byte(len(ti.Shape)))
		for _, d := range ti.Shape {
			b = binary.BigEndian.AppendUint64(b, uint64(d))
		}
	}
	h.Write(b)
	var id [32]byte
	h.Sum(id[:0])
	return id, nil
}

// InferenceRecipient returns the model's inference recipient, or an error saying why
// it has none.
func InferenceRecipient(md *container.Metadata) (*seal.X25519Recipient, error) {
	if md == nil || md.Extra[RecipientKey] == nil {
		return nil, fmt.Errorf("the model publishes no %s in its metadata (set one with apr-encode --inference-recipient)", RecipientKey)
	}
	s, ok := md.Extra[RecipientKey].(string)
	if !ok {
		return nil, fmt.Errorf("the model's %s is a %T, not an age1... string", RecipientKey, md.Extra[RecipientKey])
	}
	r, err := seal.ParseX25519Recipient(s)
	if err != nil {
		return nil, fmt.Errorf("the model's %s: %w", RecipientKey, err)
	}
	return r, nil
}

// Request is what a request says, once opened.
type Request struct {
	Model   [32]byte
	ReplyTo *seal.X25519Recipient
	ID      [16]byte
	Secret  [32]byte
	Time    time.Time
	Proba   bool
	Format  string // "auto", "csv", "npy" or "npz"
}

// NewRequest returns a request for the model with a fresh id and secret, timed now.
func NewRequest(model [32]byte, replyTo *seal.X25519Recipient, proba bool, format string) (*Request, error) {
	if _, err := formatOrAuto(format); err != nil {
		return nil, err
	}
	r := &Request{Model: model, ReplyTo: replyTo, Time: time.Now().Truncate(time.Second), Proba: proba, Format: format}
	if _, err := rand.Read(r.ID[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(r.Secret[:]); err != nil {
		return nil, err
	}
	return r, nil
}

func formatOrAuto(s string) (Format, error) {
	if s == "auto" {
		return 0, nil
	}
	f, err := ParseFormat(s)
	if err != nil {
		return 0, fmt.Errorf("%w: format %q", ErrRequest, s)
	}
	return f, nil
}

// IDString is the request id in hex, as the replay directory names it.
func (r *Request) IDString() string { return hex.EncodeToString(r.ID[:]) }

func (r *Request) header() []byte {
	return fmt.Appendf(nil, "%s\nmodel: %x\nreply-to: %s\nid: %x\nsecret: %x\ntime: %d\nproba: %t\nformat: %s\n\n",
		requestMagic, r.Model, r.ReplyTo, r.ID, r.Secret, r.Time.Unix(), r.Proba, r.Format)
}

// WriteRequest seals the request and the features (copied as they are) to the
// model's recipient and to the request's reply-to key, in age's format.
func WriteRequest(dst io.Writer, to *seal.X25519Recipient, r *Request, features io.Reader) error {
	w, err := seal.CreateAge(dst, []*seal.X25519Recipient{to, r.ReplyTo}, nil)
	if err != nil {
		return err
	}
	if _, err := w.Write(r.header()); err != nil {
		return err
	}
	if _, err := io.Copy(w, features); err != nil {
		return err
	}
	return w.Close()
}

// OpenRequest decrypts a request with one of the identities and parses its header.
// The features follow in the returned reader, which decrypts as it is read and fails
// (seal.ErrDecryptionFailed) on a truncated or altered request.
func OpenRequest(src io.Reader, ids []*seal.X25519Identity) (*Request, io.Reader, error) {
	af, err := seal.OpenAge(src, ids)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(af, maxRequestHeader)
	req, err := parseRequestHeader(br)
	if err != nil {
		return nil, nil, err
	}
	return req, br, nil
}

func parseRequestHeader(br *bufio.Reader) (*Request, error) {
	var lines []string
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		n += len(line)
		if n > maxRequestHeader || errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: header longer than %d bytes", ErrRequest, maxRequestHeader)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%w: header truncated", ErrRequest)
			}
			return nil, err
		}
		l := string(line[:len(line)-1])
		if l == "" {
			break
		}
		lines = append(lines, l)
	}
	keys := []string{"model", "reply-to", "id", "secret", "time", "proba", "format"}
	if len(lines) != len(keys)+1 || lines[0] != requestMagic {
		return nil, fmt.Errorf("%w: not an %s header", ErrRequest, requestMagic)
	}
	v := map[string]string{}
	for i, k := range keys {
		val, ok := strings.CutPrefix(lines[i+1], k+": ")
		if !ok {
			return nil, fmt.Errorf("%w: header line %d is not %q", ErrRequest, i+2, k)
		}
		v[k] = val
	}
	r := &Request{Format: v["format"]}
	for _, f := range []struct {
		key string
		dst []byte
	}{{"model", r.Model[:]}, {"id", r.ID[:]}, {"secret", r.Secret[:]}} {
		b, err := hex.DecodeString(v[f.key])
		if err != nil || len(b) != len(f.dst) || hex.EncodeToString(b) != v[f.key] {
			return nil, fmt.Errorf("%w: %s is not %d hex bytes", ErrRequest, f.key, len(f.dst))
		}
		copy(f.dst, b)
	}
	var err error
	if r.ReplyTo, err = seal.ParseX25519Recipient(v["reply-to"]); err != nil {
		return nil, fmt.Errorf("%w: reply-to: %w", ErrRequest, err)
	}
	if r.ReplyTo.String() != v["reply-to"] {
		return nil, fmt.Errorf("%w: reply-to is not written as age1... in lower case", ErrRequest)
	}
	sec, err := strconv.ParseInt(v["time"], 10, 64)
	if err != nil || strconv.FormatInt(sec, 10) != v["time"] {
		return nil, fmt.Errorf("%w: time %q", ErrRequest, v["time"])
	}
	r.Time = time.Unix(sec, 0)
	if r.Proba, err = strconv.ParseBool(v["proba"]); err != nil || (v["proba"] != "true" && v["proba"] != "false") {
		return nil, fmt.Errorf("%w: proba %q", ErrRequest, v["proba"])
	}
	if _, err := formatOrAuto(r.Format); err != nil {
		return nil, err
	}
	return r, nil
}

// Check refuses a request for another model, or one timed outside [now-maxAge,
// now+ClockSkew].
func (r *Request) Check(model [32]byte, now time.Time, maxAge time.Duration) error {
	if r.Model != model {
		return fmt.Errorf("%w: it is for another model (id %x, this one is %x)", ErrRequest, r.Model[:8], model[:8])
	}
	if r.Time.After(now.Add(ClockSkew)) {
		return fmt.Errorf("%w: made at %s, in the future", ErrRequest, r.Time.UTC().Format(time.RFC3339))
	}
	if now.Sub(r.Time) > maxAge {
		return fmt.Errorf("%w: made at %s, more than %v ago", ErrRequest, r.Time.UTC().Format(time.RFC3339), maxAge)
	}
	return nil
}

// Record enters the request's id in the replay directory dir (one empty file per
// id, created exclusively, so two servers sharing dir cannot both take one id), or
// fails with ErrReplay when it is there already.
func (r *Request) Record(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, r.IDString()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: id %s was served before", ErrReplay, r.IDString())
		}
		return fmt.Errorf("replay directory: %w", err)
	}
	return f.Close()
}

func (r *Request) tag(fileKey []byte) []byte {
	m := hmac.New(sha256.New, r.Secret[:])
	m.Write(append([]byte(replyDomain), 0))
	m.Write(r.ID[:])
	m.Write(r.Model[:])
	m.Write(fileKey)
	return m.Sum(nil)
}

// CreateReply starts the reply to r, sealed to its reply-to key: write the
// predictions, then Close (without Close the reply stays truncated and nobody opens
// it).
func CreateReply(dst io.Writer, r *Request) (io.WriteCloser, error) {
	return seal.CreateAge(dst, []*seal.X25519Recipient{r.ReplyTo}, func(fileKey []byte) ([]seal.AgeStanza, error) {
		return []seal.AgeStanza{{Type: replyStanza, Args: []string{encodeTag(r.tag(fileKey))}}}, nil
	})
}

func encodeTag(b []byte) string { return base64.RawStdEncoding.EncodeToString(b) }

// OpenReply opens a reply with the requester's identities and checks that it answers
// r; the predictions follow in the returned reader, which fails on a truncated or
// altered reply.
func OpenReply(src io.Reader, r *Request, ids []*seal.X25519Identity) (io.Reader, error) {
	af, err := seal.OpenAge(src, ids)
	if err != nil {
		return nil, err
	}
	want := encodeTag(r.tag(af.FileKey()))
	found := false
	for _, s := range af.Stanzas {
		if s.Type != replyStanza {
			continue
		}
		if found || len(s.Args) != 1 || len(s.Body) != 0 {
			return nil, fmt.Errorf("%w: a malformed %s stanza", ErrReply, replyStanza)
		}
		if !hmac.Equal([]byte(s.Args[0]), []byte(want)) {
			return nil, fmt.Errorf("%w: it answers another request", ErrReply)
		}
		found = true
	}
	if !found {
		return nil, fmt.Errorf("%w: it carries no %s stanza (an age file, but not a reply of apr-predict --serve-request)", ErrReply, replyStanza)
	}
	return af, nil
}

// RequestFormat returns the predictions' format a request asks for, given the
// features' format (the default).
func (r *Request) RequestFormat(features Format) Format {
	if f, err := formatOrAuto(r.Format); err == nil && f != 0 {
		return f
	}
	return features
}

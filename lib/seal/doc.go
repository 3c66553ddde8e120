// Package seal holds the cryptographic building blocks of APR's sealing
// (encryption) feature, independent of the container format:
//
//   - a chunked AEAD stream (Encryptor, Decryptor, Writer, Reader) that
//     encrypts a large payload in caller-sized chunks with AES-256-GCM,
//     following the structure of C2SP's chunked-encryption
//     (https://c2sp.org/chunked-encryption): a random salt, an HKDF-derived
//     payload key, nonce base and key commitment, counter nonces, and an
//     explicit last-chunk flag so that truncation and extension are detected;
//   - file-key wrapping in "stanzas" (the word comes from age): for a password
//     (Argon2id, PasswordRecipient / PasswordIdentity) and for X25519 public
//     keys (X25519Recipient / X25519Identity, written in age's "age1..." and
//     "AGE-SECRET-KEY-1..." formats);
//   - a header MAC keyed by the file key, so a container can authenticate the
//     parts of its header that stay readable;
//   - age's own file format, version 1, for X25519 recipients (CreateAge,
//     OpenAge in age.go): apr-predict's private requests and replies, which
//     `age -d` opens.
//
// # Typical use
//
// Sealing:
//
//	fileKey, _ := seal.NewFileKey()
//	stanzas, _ := seal.WrapFileKey(fileKey, recipient1, recipient2)
//	blob, _ := seal.MarshalStanzas(stanzas)        // store in the container
//	enc, _ := seal.NewEncryptor(fileKey, context)  // context: optional binding
//	header := enc.Header()                          // 56 bytes, store them too
//	ct0, _ := enc.SealChunk(nil, 0, chunk0, false)
//	ct1, _ := enc.SealChunk(nil, 1, chunk1, true)   // the last chunk
//
// Unsealing:
//
//	stanzas, _ := seal.ParseStanzas(blob)
//	fileKey, err := seal.UnwrapFileKey(stanzas, identity) // errors.Is(err, seal.ErrDecryptionFailed) for a wrong key
//	dec, err := seal.NewDecryptor(fileKey, header, context) // checks the key commitment
//	pt0, err := dec.Next(nil, 0, ct0, false)
//	pt1, err := dec.Next(nil, 1, ct1, true)
//	err = dec.Finish() // ErrMissingFinal if the final chunk never came
//
// Every error caused by a wrong key or password, or by ciphertext that does
// not authenticate, wraps ErrDecryptionFailed, and most also wrap a more
// specific sentinel (ErrMissingFinal, ErrDataAfterFinal, ErrChunkOrder, ...).
// Errors that come from structurally malformed input wrap ErrMalformed;
// parameters beyond the configured caps wrap ErrParamsOutOfRange.
package seal

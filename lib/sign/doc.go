// Package sign holds APR's signing building blocks, independent of the
// container format:
//
//   - Ed25519 keys (PrivateKey, PublicKey with an 8-byte KeyID): generated
//     here, written as PKCS#8 / PKIX PEM (as openssl writes them) or in
//     minisign's formats, and read from PEM, OpenSSH ed25519 files
//     (encrypted ones need a passphrase) and minisign key files
//     (unencrypted, or scrypt-encrypted with a passphrase);
//   - signature statements (Sign, Verify): an Ed25519 signature over
//     "apr-signature-v1\x00" || 32-byte digest || key id, time and comment,
//     verified only against keys the caller trusts;
//   - minisign-compatible detached signatures of a whole stream
//     (SignMinisign, VerifyMinisign), which `minisign -V` checks;
//   - license blocks (SignLicense, VerifyLicense) signed by an issuer.
//
// Trust: a key id, or a key embedded in a file, only helps to find a
// candidate key. Verification succeeds only with a public key from the
// caller's trusted list. Failures wrap ErrSignatureInvalid (or the license
// errors); unparsable input wraps ErrMalformed. Every parser caps its input
// and is fuzzed.
package sign

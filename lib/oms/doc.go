// Package oms signs and verifies models the way OpenSSF Model Signing (OMS, spec v1.0,
// github.com/ossf/model-signing-spec) and its reference implementation model_signing
// (sigstore/model-transparency) do: a detached Sigstore bundle (model.sig) whose DSSE
// envelope signs an in-toto Statement v1 listing every file of a model, or every
// shard of a file, with its digest.
//
// The pieces, in the order a signature is made:
//   - Hash (serialize.go) enumerates a model (a directory or one file) with the
//     spec's exclusions and symlink rules and hashes its files or shards on all CPUs.
//   - Manifest.Statement (statement.go) writes the in-toto statement, byte-identical
//     for the same inputs; ParseStatement reads one back, including the v0.2
//     predicate model_signing wrote before the spec.
//   - Sign / Verify (bundle.go, keys.go) wrap the statement in a DSSE envelope and
//     a Sigstore bundle (media type v0.3) for the key method (ECDSA P-256/P-384/P-521
//     PEM keys) and the certificate method (a PEM chain checked against given roots).
//   - Compare (compare.go) says which file is missing, extra or changed.
//
// Keyless Sigstore bundles are checked offline by Keyless (keyless.go) against a
// trusted root the caller gives (Fulcio's CAs, Rekor's keys): this package carries
// none and goes to no network.
package oms

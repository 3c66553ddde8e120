package cli

import (
	"fmt"

	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/seal"
)

// Unsealer opens a sealed input with the identities of -i, or a passphrase asked
// for (from --passphrase, --passphrase-file or --passphrase-env) only once the input
// turns out to be sealed for one, so that an unsealed input never prompts. It is nil
// when neither was given: a sealed input is then refused.
func Unsealer(ids *IdentityFlag, pass *PassphraseFlags) (container.Unsealer, error) {
	if pass.PassphraseFile != "" && pass.PassphraseEnv != "" {
		return nil, Usagef("give the passphrase once: --passphrase-file or --passphrase-env")
	}
	if len(ids.Identity) == 0 && !pass.Wanted() {
		return nil, nil
	}
	parsed, err := ids.Identities()
	if err != nil {
		return nil, err
	}
	return &lazyUnsealer{ids: parsed, pass: pass}, nil
}

type lazyUnsealer struct {
	ids  []seal.Identity
	pass *PassphraseFlags
}

func (u *lazyUnsealer) Begin(header, metadata, section []byte) (container.TensorOpener, error) {
	ids := u.ids
	if u.pass.Wanted() {
		si, err := apr.ParseSealInfo(section)
		if err != nil {
			return nil, err
		}
		if !si.Password {
			return nil, fmt.Errorf("%w: the input is not sealed for a passphrase (it is for %d X25519 recipient(s); give -i IDENTITY)",
				apr.ErrDecryptionFailed, si.X25519)
		}
		pw, err := u.pass.Read("Passphrase of the sealed model: ", false)
		if err != nil {
			return nil, err
		}
		ids = append(ids[:len(ids):len(ids)], seal.NewPasswordIdentity(pw))
	}
	return apr.NewUnsealer(ids...).Begin(header, metadata, section)
}

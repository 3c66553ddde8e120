package cli

import (
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// Deprecated spellings are hidden flags of the grammar tagged with the spelling the
// user typed and the flag that replaces it:
//
//	OldP bool `name:"deprecated-p" short:"p" hidden:"" deprecated:"-p for a passphrase" use:"passphrase"`
//
// After parsing, a deprecated flag that was given moves its value to the flag named by
// use (appended for a repeatable flag) and prints one line on stderr, even with -q:
//
//	apr-seal: -p for a passphrase is deprecated; use --passphrase
//
// Giving both spellings of a single-valued flag with different values is a usage
// error. Old spellings are kept for one release (docs/CLI.md lists them).

func applyDeprecated(env *Env, ctx *kong.Context) error {
	flags := ctx.Flags()
	byName := map[string]*kong.Flag{}
	for _, f := range flags {
		byName[f.Name] = f
	}
	for _, f := range flags {
		old := f.Tag.Get("deprecated")
		if old == "" || f.Target.IsZero() {
			continue
		}
		use := f.Tag.Get("use")
		to, ok := byName[use]
		if !ok {
			return Usagef("%s is no longer supported", old)
		}
		env.Deprecated(old, "--"+use)
		switch {
		case to.Target.Kind() == reflect.Slice:
			to.Target.Set(reflect.AppendSlice(to.Target, f.Target))
		case givenToo(to) && !to.Target.Equal(f.Target):
			return Usagef("%s and --%s say different things: give --%s only", old, use, use)
		default:
			to.Target.Set(f.Target)
		}
	}
	return nil
}

// givenToo reports whether the flag f holds a value other than its default.
func givenToo(f *kong.Flag) bool {
	return !f.Target.IsZero() && !(f.HasDefault && fmt.Sprint(f.Target.Interface()) == f.Default)
}

// Deprecated prints "NAME: OLD is deprecated; use NEW" on stderr (even with -q: a
// script that still uses OLD has one release to change).
func (e *Env) Deprecated(old, use string) {
	e.Errorf("%s is deprecated; use %s", old, use)
}

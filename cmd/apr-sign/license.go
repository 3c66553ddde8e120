package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/apr-go/apr/cmd/internal/cli"
	"github.com/apr-go/apr/lib/apr"
	"github.com/apr-go/apr/lib/sign"
)

func (c *licenseCmd) Run(env *cli.Env) error {
	lic := sign.License{Licensee: c.Licensee, Tier: c.Tier, Seats: c.Seats}
	var err error
	if c.Issued != "" {
		if lic.IssuedAt, err = parseDate(c.Issued); err != nil {
			return cli.Usagef("--issued: %v", err)
		}
	} else if lic.IssuedAt, err = signTime(); err != nil {
		return err
	}
	if c.Expires != "" {
		if d, ok := parseDays(c.Expires); ok {
			lic.ExpiresAt = lic.IssuedAt.Add(d)
		} else if lic.ExpiresAt, err = parseDate(c.Expires); err != nil {
			return cli.Usagef("--expires: %v", err)
		}
		if !lic.ExpiresAt.After(lic.IssuedAt) {
			return cli.Usagef("--expires %s is not after the issue time %s", lic.ExpiresAt.UTC().Format(time.RFC3339), lic.IssuedAt.UTC().Format(time.RFC3339))
		}
	}
	key, err := c.Load(env, &c.PassphraseFlags)
	if err != nil {
		return err
	}
	in, name, out, u, err := c.modelIO(env, c.Input, c.Output)
	if err != nil {
		return err
	}
	defer in.Close()
	defer out.Abort()
	signed, replaced, err := apr.LicenseStream(out, in, lic, key, apr.WithSealedInput(u))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	if replaced {
		env.Warnf("%s: the previous license was replaced", name)
	}
	env.Infof("%s: licensed to %q by issuer key %s", name, signed.Licensee, signed.IssuerKeyID)
	return nil
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD or RFC 3339)", s)
	}
	return t, nil
}

// parseDays accepts "365d" and Go durations such as "720h".
func parseDays(s string) (time.Duration, bool) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && days > 0 && days < 100000 && fmt.Sprint(days) == n {
			return time.Duration(days) * 24 * time.Hour, true
		}
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, true
	}
	return 0, false
}

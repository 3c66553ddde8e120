package main

import "errors"

var errNoTerminal = errors.New("no terminal to ask for the password on; give --passphrase-file FILE or --passphrase-env VAR")

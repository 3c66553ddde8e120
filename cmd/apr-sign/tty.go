package main

import "errors"

var errNoTerminal = errors.New("no terminal to ask for the password on; give --password-file FILE or --password-env VAR")

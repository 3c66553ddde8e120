// Package version is apr's release number, a leaf so that every layer can stamp the
// files it writes (the metadata's producer) and the programs can print it.
package version

// Number is apr's release.
const Number = "0.1.0"

// Producer is the producer string written into the metadata of new files.
const Producer = "apr " + Number

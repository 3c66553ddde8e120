// Package splice moves file bytes into a pipe without copying them through user
// memory (splice(2) on Linux): a program that reads a model from a mapped file and
// writes it into a pipe then hands the page cache's pages to the pipe by reference.
// Elsewhere FromFile reports false and the caller writes the bytes itself.
package splice

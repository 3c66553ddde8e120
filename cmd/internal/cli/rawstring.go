package cli

import (
	"fmt"
	"reflect"

	"github.com/alecthomas/kong"
)

// rawString decodes a string argument or flag value as the bytes given. kong's own
// string mapper goes through encoding/json, which turns bytes that are not UTF-8 into
// U+FFFD: a file name in another encoding would name another file, and
// apr-quant --override-kv KEY=str:VALUE would write other bytes than llama-quantize,
// which writes those given.
type rawString struct{}

func (rawString) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	t, err := ctx.Scan.PopValue("string")
	if err != nil {
		return err
	}
	s, ok := t.Value.(string)
	if !ok {
		return fmt.Errorf("expected a string, got %v", t.Value)
	}
	target.SetString(s)
	return nil
}

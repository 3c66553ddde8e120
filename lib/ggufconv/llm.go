package ggufconv

import (
	"fmt"
	"strings"

	"github.com/apr-go/apr/lib/container"
	"github.com/apr-go/apr/lib/llm"
)

// checkArchitecture refuses to export a Hugging Face language model that is not in
// llama.cpp's form (an architecture lib/llm does not convert, or one imported with
// HFLayout): its GGUF would carry Hugging Face tensor names and no hyperparameters,
// which llama.cpp cannot run. ExportOptions.Generic writes it anyway.
func checkArchitecture(md container.Metadata, o ExportOptions) error {
	if o.Generic {
		return nil
	}
	if _, ok := md.Extra[KeyGGUF]; ok {
		return nil
	}
	files, _ := md.Extra["hf_files"].(map[string]any)
	var raw []byte
	switch b := files["config.json"].(type) { // bytes as written, a string as read back
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	}
	arch := llm.Architecture(map[string][]byte{"config.json": raw})
	if arch == "" {
		return nil
	}
	if _, known := llm.LookupArch(arch); known {
		return fmt.Errorf("this %s checkpoint was imported in its Hugging Face layout; import it without --hf-layout "+
			"to get llama.cpp's form, or export a generic GGUF with --generic", arch)
	}
	return fmt.Errorf("architecture %q (config.json) is not one apr converts for llama.cpp (supported: %s); "+
		"--generic writes a generic GGUF of the tensors under their own names, which llama.cpp cannot run",
		arch, strings.Join(llm.Supported(), ", "))
}

package safetensors

import (
	"path/filepath"
	"strings"
)

// KeptFile reports whether a checkpoint directory's file is kept in the metadata of
// an import (lib/stconv), besides its shards: JSON files (config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json,
// special_tokens_map.json, added_tokens.json, preprocessor_config.json, vocab.json,
// ...) other than the index, and the tokenizer vocabularies (merges.txt, vocab.txt
// and other vocab.* files, SentencePiece *.model, *.tiktoken, chat templates *.jinja).
// Weights in other formats, READMEs and licenses are not kept.
func KeptFile(name string) bool {
	if name == IndexFileName || strings.HasPrefix(name, ".") || !ValidShardName(name) {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".json", ".model", ".tiktoken", ".jinja":
		return true
	}
	return name == "merges.txt" || strings.HasPrefix(name, "vocab.")
}

// CheckpointFile reports whether an import of a checkpoint directory may read the
// file: a shard (*.safetensors), the index, or a kept file.
func CheckpointFile(name string) bool {
	return name == IndexFileName || strings.HasSuffix(name, ".safetensors") || KeptFile(name)
}

package pipelines

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var programs = []string{"apr-encode", "apr-decode", "apr-quant", "apr-sign", "apr-seal", "apr-st", "apr-st-import",
	"apr-st-export", "apr-gguf", "apr-gguf-import", "apr-gguf-export", "apr-distill",
	"apr-predict", "apr-onnx"}

// TestCompletionsAndManPages checks what make install writes, generated from each
// program's kong model: the bash completion loads in bash and registers the program,
// zsh and fish parse theirs (when installed), and man renders the man page.
func TestCompletionsAndManPages(t *testing.T) {
	dir := t.TempDir()
	gen := func(prog, arg string) string {
		t.Helper()
		out, err := exec.Command(prog, arg).Output()
		if err != nil || len(out) == 0 {
			t.Fatalf("%s %s: %v", prog, arg, err)
		}
		p := filepath.Join(dir, prog+strings.TrimPrefix(arg, "--"))
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bash, errBash := exec.LookPath("bash")
	man, errMan := exec.LookPath("man")
	if errBash != nil {
		t.Log("bash is not installed: completions are not loaded")
	}
	if errMan != nil {
		t.Log("man is not installed (Debian: man-db): man pages are not rendered")
	}
	for _, prog := range programs {
		if errBash == nil {
			f := gen(prog, "--completion=bash")
			out, err := exec.Command(bash, "-c", "source '"+f+"' && complete -p "+prog).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "complete -o default -F _"+strings.ReplaceAll(prog, "-", "_")+" "+prog) {
				t.Errorf("%s: bash completion: %v\n%s", prog, err, out)
			}
		}
		for _, sh := range []string{"zsh", "fish"} {
			f := gen(prog, "--completion="+sh)
			if path, err := exec.LookPath(sh); err == nil {
				if out, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
					t.Errorf("%s: %s completion does not parse: %v\n%s", prog, sh, err, out)
				}
			}
		}
		f := gen(prog, "--man")
		if errMan == nil {
			cmd := exec.Command(man, "-l", f)
			cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), strings.ToUpper(prog)+"(1)") || !strings.Contains(string(out), "SYNOPSIS") {
				t.Errorf("%s: man -l: %v\n%s", prog, err, out)
			}
		}
	}
}

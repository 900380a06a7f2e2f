package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
	"sigs.k8s.io/yaml"
)

// The CEL cases of testdata/cel are txtar archives: the comment is a
// script of kubectl commands with the output a user sees, the files are
// what the commands read. Each case gets its own API group,
// <case>.cel.example.com, and "$GROUP" in files and commands stands for
// it, so cases share one server and run in parallel.
//
// Script lines:
//
//	# comment
//	crd FILE [created|configured]   kubectl apply -f FILE of a CRD, then wait until it is Established
//	[retry] [!] kubectl ARGS...     run kubectl in the case's directory; ! means it must fail
//	> LINE                          a line of the standard output of the command above
//	2> LINE                         a line of its standard error
//
// In output, "$SUFFIX" matches the random end of a generated name.
// Without "> " lines standard output is not checked. Standard error is
// always checked: without "2> " lines it must be empty, since kubectl's
// warnings are part of what the user sees. "retry" repeats the command
// for up to crdSettle until its result is the one written, for commands
// that follow a CRD change the server applies asynchronously (such a
// probe that must fail uses --dry-run=server, so that an early success
// stores nothing that would change later attempts). Arguments
// are split at spaces; single quotes keep a JSON patch together.
//
// A file named *.schema.yaml holds only an openAPIV3Schema: it is written
// out as a namespaced CRD things.$GROUP of kind Thing, version v1. The
// crd command reads the CRD's name from its file.

// celScript is a parsed case.
type celScript struct {
	file  string // testdata path, for messages
	group string
	files []txtar.File
	cmds  []*scriptCmd
}

type scriptCmd struct {
	line          int
	verb          string // "crd" or "kubectl"
	args          []string
	fail, retry   bool
	stdout        []string
	checkStdout   bool
	stderr        []string
	wantCRDResult string // crd: created or configured
}

// loadCELScript parses a txtar case.
func loadCELScript(t *testing.T, file string) *celScript {
	t.Helper()
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSuffix(filepath.Base(file), ".txtar")
	s := &celScript{file: file, group: name + ".cel.example.com", files: ar.Files}
	var last *scriptCmd
	for i, raw := range strings.Split(string(ar.Comment), "\n") {
		line := strings.TrimRight(raw, " \t")
		where := fmt.Sprintf("%s:%d", file, i+1)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line == ">" || strings.HasPrefix(line, "> "):
			if last == nil {
				t.Fatalf("%s: output before any command", where)
			}
			last.checkStdout = true
			last.stdout = append(last.stdout, strings.TrimPrefix(strings.TrimPrefix(line, ">"), " "))
			continue
		case line == "2>" || strings.HasPrefix(line, "2> "):
			if last == nil {
				t.Fatalf("%s: output before any command", where)
			}
			last.stderr = append(last.stderr, strings.TrimPrefix(strings.TrimPrefix(line, "2>"), " "))
			continue
		}
		words, err := splitScriptLine(line)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		c := &scriptCmd{line: i + 1}
		for len(words) > 0 && (words[0] == "retry" || words[0] == "!") {
			if words[0] == "retry" {
				c.retry = true
			} else {
				c.fail = true
			}
			words = words[1:]
		}
		if len(words) == 0 {
			t.Fatalf("%s: no command", where)
		}
		c.verb, c.args = words[0], words[1:]
		switch c.verb {
		case "kubectl":
		case "crd":
			if len(c.args) < 1 || len(c.args) > 2 || c.fail {
				t.Fatalf("%s: want crd FILE [created|configured]", where)
			}
			c.wantCRDResult = "created"
			if len(c.args) == 2 {
				c.wantCRDResult = c.args[1]
			}
		default:
			t.Fatalf("%s: unknown command %q", where, c.verb)
		}
		s.cmds = append(s.cmds, c)
		last = c
	}
	for _, c := range s.cmds {
		if c.fail && len(c.stderr) == 0 {
			t.Fatalf("%s:%d: a command that must fail needs the error it prints (2> lines)", file, c.line)
		}
	}
	return s
}

// splitScriptLine splits at spaces; single quotes group words and are
// removed.
func splitScriptLine(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			in, quoted = !in, true
		case r == ' ' && !in:
			if cur.Len() > 0 || quoted {
				words = append(words, cur.String())
			}
			cur.Reset()
			quoted = false
		default:
			cur.WriteRune(r)
		}
	}
	if in {
		return nil, errors.New("unterminated quote")
	}
	if cur.Len() > 0 || quoted {
		words = append(words, cur.String())
	}
	return words, nil
}

// crdTemplate wraps a *.schema.yaml file.
const crdTemplate = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.$GROUP
spec:
  group: $GROUP
  scope: Namespaced
  names:
    plural: things
    singular: thing
    kind: Thing
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
`

// writeFiles writes the case's files to dir with $GROUP expanded.
func (s *celScript) writeFiles(t *testing.T, dir string) {
	t.Helper()
	for _, f := range s.files {
		data := string(f.Data)
		if strings.HasSuffix(f.Name, ".schema.yaml") {
			var b strings.Builder
			b.WriteString(crdTemplate)
			for _, l := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
				b.WriteString("        " + l + "\n")
			}
			data = b.String()
		}
		data = strings.ReplaceAll(data, "$GROUP", s.group)
		path := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs the script against srv.
func (s *celScript) run(t *testing.T, srv *server) {
	dir := t.TempDir()
	s.writeFiles(t, dir)
	for _, c := range s.cmds {
		where := fmt.Sprintf("%s:%d", s.file, c.line)
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.ReplaceAll(a, "$GROUP", s.group)
		}
		var crdName string
		if c.verb == "crd" {
			crdName = nameOf(t, filepath.Join(dir, args[0]))
			c.stdout = []string{"customresourcedefinition.apiextensions.k8s.io/" + crdName + " " + c.wantCRDResult}
			c.checkStdout = true
			args = []string{"apply", "-f", args[0]}
		}
		ok := s.runKubectl(t, srv, dir, where, c, args)
		if !ok {
			// Later commands depend on this one's effect.
			return
		}
		if c.verb == "crd" {
			waitEstablished(t, srv, crdName)
		}
	}
}

// nameOf is the metadata.name of the object in a YAML file.
func nameOf(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil || obj.Metadata.Name == "" {
		t.Fatalf("%s: no metadata.name (%v)", file, err)
	}
	return obj.Metadata.Name
}

// runKubectl runs one command (until it gives the written result, with
// retry) and reports whether it did.
func (s *celScript) runKubectl(t *testing.T, srv *server, dir, where string, c *scriptCmd, args []string) bool {
	t.Helper()
	deadline := time.Now().Add(crdSettle)
	for {
		stdout, stderr, err := kubectlIn(dir, srv, args...)
		problem := c.check(s, stdout, stderr, err)
		if problem == "" {
			return true
		}
		if !c.retry || time.Now().After(deadline) {
			t.Errorf("%s: kubectl %s: %s", where, strings.Join(args, " "), problem)
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check compares a command's result with the script's expectations.
func (c *scriptCmd) check(s *celScript, stdout, stderr string, err error) string {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return err.Error()
	}
	expand := func(lines []string) string {
		return normalizeOutput(strings.ReplaceAll(strings.Join(lines, "\n"), "$GROUP", s.group))
	}
	var b strings.Builder
	switch {
	case c.fail && err == nil:
		b.WriteString("succeeded, want it to fail\n")
	case !c.fail && err != nil:
		fmt.Fprintf(&b, "failed (%v), want it to succeed\n", err)
	}
	if got, want := normalizeOutput(stderr), expand(c.stderr); !outputMatches(got, want) {
		fmt.Fprintf(&b, "standard error:\n%s\nwant:\n%s\n", got, want)
	}
	if got, want := normalizeOutput(stdout), expand(c.stdout); c.checkStdout && !outputMatches(got, want) {
		fmt.Fprintf(&b, "standard output:\n%s\nwant:\n%s\n", got, want)
	}
	if b.Len() > 0 && !c.checkStdout && stdout != "" {
		fmt.Fprintf(&b, "standard output:\n%s\n", stdout)
	}
	return b.String()
}

// selfTypeName matches the name CEL gives the type of an object schema
// in messages: upstream names it selfType<nanoseconds of the clock>, so
// it cannot be compared.
var selfTypeName = regexp.MustCompile(`\bselfType[0-9]+\b`)

// normalizeOutput trims the output and its lines' trailing spaces (kubectl
// ends "is invalid: " with one before a list) and names every self type
// selfTypeN.
func normalizeOutput(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return selfTypeName.ReplaceAllString(strings.Join(lines, "\n"), "selfTypeN")
}

// outputMatches compares output with what a script wants, where
// "$SUFFIX" stands for the five random characters the server appends to
// a generateName.
func outputMatches(got, want string) bool {
	if !strings.Contains(want, "$SUFFIX") {
		return got == want
	}
	re := strings.ReplaceAll(regexp.QuoteMeta(want), regexp.QuoteMeta("$SUFFIX"), "[bcdfghjklmnpqrstvwxz2456789]{5}")
	return regexp.MustCompile("^" + re + "$").MatchString(got)
}

// kubectlIn runs kubectl against srv in dir, so that file names in its
// messages are the script's.
func kubectlIn(dir string, srv *server, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlLimit)
	defer cancel()
	cmd, err := kubectlCommand(ctx, srv, args...)
	if err != nil {
		return "", "", err
	}
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

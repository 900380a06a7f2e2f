package main

import (
	"fmt"
	"io"

	"github.com/crdserver/crdserver/internal/lint"
)

// runLint is `crdserver lint FILE|DIR...`: it checks CRD manifests as the
// server would on create and prints each problem with its file and line.
// It exits 1 when there is one, 2 for a path it cannot read or no path.
func runLint(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stderr, "usage: crdserver lint FILE|DIR...\n\nChecks CustomResourceDefinition manifests (YAML or JSON, several documents\nper file; directories are searched for .yaml, .yml and .json files) as the\nserver checks them on create: names, versions, structural schemas, defaults,\nCEL rules and their cost. No server is needed.")
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	problems, err := lint.Paths(args)
	for _, p := range problems {
		fmt.Fprintln(stdout, p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crdserver lint: %v\n", err)
		return 2
	}
	if len(problems) > 0 {
		return 1
	}
	return 0
}

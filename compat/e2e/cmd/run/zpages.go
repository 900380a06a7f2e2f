package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// A "zpage" line compares a component page (/statusz, /flagz) answered
// with 200 by its form, not its text: what a page shows differs between
// any two servers by design (the start time and uptime, the Go and binary
// versions, each server's own flags), and its text separates names from
// values with a delimiter picked at random. Other answers (a 406 Status)
// are compared as any line's.
//
// The text is compared line by line: the title and warning as they are;
// each /statusz line by its name, its value masked but the emulation
// version's and the paths'; /flagz's lines by whether they are sorted by
// name. And every line must separate name and value with one of
// upstream's delimiters, the same one. An object, JSON or YAML, is
// compared by its members: apiVersion, kind, metadata, emulationVersion
// and paths as they are, the others by their JSON type; JSON also by
// whether it is indented and ends in a newline.

// pageDelimiters are upstream's, ": " before ":" which begins it.
var pageDelimiters = []string{": ", ":", "=", " "}

// statuszNames are the names of /statusz's lines, and statuszShown those
// whose values two servers share.
var (
	statuszNames = []string{"Started", "Up", "Go version", "Binary version", "Emulation version", "Paths"}
	statuszShown = []string{"Emulation version", "Paths"}
	pageShown    = []string{"apiVersion", "kind", "metadata", "emulationVersion", "paths"}
)

// flagNameChars are those of a flag's name.
const flagNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"

// pageForm is the form of a page's answer of type contentType.
func pageForm(contentType string, b []byte) string {
	if strings.HasPrefix(contentType, "text/plain") {
		return "text " + pageText(string(b))
	}
	return pageObject(contentType, b)
}

func pageText(s string) string {
	lines := strings.Split(s, "\n")
	title := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Warning: ") }) - 1
	if title < 0 {
		return "(no warning) " + strconv.Quote(s)
	}
	out := slices.Clone(lines[:title+2])
	flagz := strings.HasSuffix(lines[title], " flagz")
	delims := map[string]bool{}
	var flags []string
	for _, l := range lines[title+2:] {
		switch {
		case l == "":
			out = append(out, "")
		case flagz:
			name := l[:len(l)-len(strings.TrimLeft(l, flagNameChars))]
			delims[delimiterOf(l[len(name):], "")] = true
			flags = append(flags, name)
		default:
			out = append(out, statuszLine(l, delims))
		}
	}
	if flagz {
		out = append(out, fmt.Sprintf("(flags sorted: %v)", len(flags) > 0 && slices.IsSorted(flags)))
	}
	one := len(delims) == 1 && !delims[""]
	return strconv.Quote(strings.Join(out, "\n")) + fmt.Sprintf(" (one of upstream's delimiters: %v)", one)
}

// statuszLine is l, a /statusz line, with its delimiter recorded in
// delims and its value masked unless statuszShown.
func statuszLine(l string, delims map[string]bool) string {
	for _, name := range statuszNames {
		if rest, ok := strings.CutPrefix(l, name); ok {
			d := delimiterOf(rest, " ")
			delims[d] = true
			value := "-"
			if slices.Contains(statuszShown, name) {
				value = strings.TrimPrefix(rest, d+" ")
			}
			return name + "<D> " + value
		}
	}
	delims[""] = true
	return "(unknown line) " + l
}

// delimiterOf is the delimiter rest begins with, followed by after; ""
// when none is.
func delimiterOf(rest, after string) string {
	for _, d := range pageDelimiters {
		if strings.HasPrefix(rest, d+after) {
			return d
		}
	}
	return ""
}

// pageObject is the form of a page's object: its members, masked but
// pageShown, and for JSON its layout.
func pageObject(contentType string, b []byte) string {
	layout := ""
	if strings.HasPrefix(contentType, "application/json") {
		layout = fmt.Sprintf("indented=%v newline=%v ", bytes.HasPrefix(b, []byte("{\n")), bytes.HasSuffix(b, []byte("\n")))
	}
	j, err := yaml.ToJSON(b)
	if err != nil {
		return "(not JSON nor YAML) " + strconv.Quote(string(b))
	}
	var members map[string]any
	if err := json.Unmarshal(j, &members); err != nil {
		return "(not an object) " + strconv.Quote(string(b))
	}
	for k, v := range members {
		if !slices.Contains(pageShown, k) {
			members[k] = fmt.Sprintf("(%T)", v)
		}
	}
	m, _ := json.Marshal(members)
	return "object " + layout + string(m)
}

package manifest

import "sync"

// input is one decoded input, kept by the resources decoded from it so
// that Source.Field can find their spec fields again. The decoder does not
// record positions (they would cost more memory than the resources
// themselves); the first question about an input decodes it once more,
// recording every document's, and keeps them for the rest.
type input struct {
	data []byte // what was decoded; never changed
	file string

	once   sync.Once
	fields map[int]map[string]position // resource index → spec field path → position
}

// position is a 1-based line and column in a file.
type position struct{ line, col int32 }

// positions returns where the spec fields of the resource at index are
// written; nil for a resource not decoded from an input.
func (in *input) positions(index int) map[string]position {
	if in == nil {
		return nil
	}
	in.once.Do(func() {
		c := &converter{file: in.file, errs: &errorList{}, budget: maxNodes, found: map[int]map[string]position{}}
		c.decode(in.data)
		in.fields = c.found
	})
	return in.fields[index]
}

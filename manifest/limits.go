package manifest

// The limits on what decoding accepts. They keep a hostile or mistaken input
// (a list of a million tags, a document nested a thousand levels, a "billion
// laughs" of aliases) from using unbounded time and memory, and are far
// above what a real manifest needs. Each is reported as an
// [*errcode.InputError] naming the file, the line and the field. Limits that
// depend on what a field means (how many tags a Proxmox VM may have) are the
// providers' to check.
const (
	// maxInputSize bounds one input (a file, standard input, a Decode
	// reader).
	maxInputSize = 4 << 20
	// maxDocumentSize bounds one document of an input (a YAML document, a
	// JSON value). It is checked before the document is parsed: the YAML
	// parser's tree takes up to about a hundred times the size of the
	// text, so this is what bounds the memory a decode needs.
	maxDocumentSize = 1 << 20
	// maxResources bounds the resources of one input, and of one Load.
	maxResources = 10_000
	// maxNodes bounds the values one input expands to, aliases followed,
	// summed over its documents.
	maxNodes = 1_000_000
	// maxDepth bounds the nesting of a document, aliases followed, and of
	// a value checked by Validate.
	maxDepth = 128
	// maxListLen bounds the items of one list and the keys of one map.
	maxListLen = 10_000
	// maxStringLen bounds one string value, in bytes.
	maxStringLen = 256 << 10
	// maxKeyLen bounds one map key, in bytes.
	maxKeyLen = 4 << 10
)

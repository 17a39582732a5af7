package output

import (
	"github.com/openctl/openctl"
	"github.com/openctl/openctl/manifest"
	"github.com/openctl/openctl/state"
)

// Recorded returns the resource a state record describes, as it was
// applied, with "[redacted]" at every secret spec field the record keeps
// sealed, so that [Print] output applied again keeps the secret. It is
// [openctl.Recorded], kept here beside the printers that use it.
func Recorded(rec *state.Record) *manifest.Resource { return openctl.Recorded(rec) }

package manifest

import (
	"fmt"

	"github.com/openctl/openctl/errcode"
)

// CheckDuplicates reports resources that share an ID. Each repeat is an
// [*errcode.InputError] at the repeat's Source naming where the first one
// is, for example "b.yaml:7: duplicate resource VirtualMachine/web-01 (first
// defined at a.yaml:3)". All repeats are reported, joined; nil entries are
// ignored.
func CheckDuplicates(rs []*Resource) error {
	var errs errorList
	checkDuplicates(rs, &errs)
	return errs.err()
}

func checkDuplicates(rs []*Resource, errs *errorList) {
	first := make(map[ID]int, len(rs))
	for i, r := range rs {
		if r == nil {
			continue
		}
		id := r.ID()
		j, dup := first[id]
		if !dup {
			first[id] = i
			continue
		}
		where := rs[j].Source.String()
		if where == "" {
			where = fmt.Sprintf("item %d of the list", j)
		}
		errs.add(inputError(errcode.InputError{
			File: r.Source.File,
			Line: r.Source.Line,
			Msg:  fmt.Sprintf("duplicate resource %s (first defined at %s)", id.Short(), where),
		}))
	}
}

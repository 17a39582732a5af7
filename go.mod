module github.com/openctl/openctl

go 1.26.0

require (
	github.com/Luzifer/go-openssl/v4 v4.2.4
	github.com/jackc/pgx/v5 v5.12.0
	github.com/luthermonson/go-proxmox v0.9.0
	github.com/rogpeppe/go-internal v1.16.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/spf13/cobra v1.10.2
	github.com/stretchr/testify v1.12.1
	golang.org/x/crypto v0.37.0
	golang.org/x/sys v0.47.0
	golang.org/x/term v0.31.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/buger/goterm v1.0.4 // indirect
	github.com/diskfs/go-diskfs v1.9.3 // indirect
	github.com/djherbis/times v1.6.0 // indirect
	github.com/gorilla/websocket v1.4.2 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/jinzhu/copier v0.3.4 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/magefile/mage v1.14.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	golang.org/x/tools v0.48.0 // indirect
)

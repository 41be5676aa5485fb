// Build file for machines that take amqp091-go from Debian's
// golang-github-rabbitmq-amqp091-go-dev instead of the Go module proxy:
//
//	GOFLAGS=-mod=mod GOPROXY=off go build -modfile=go.debian.mod ./...
//
// Keep its require in step with go.mod, which is what everyone else uses.
module acemq-interop/peers/go

go 1.19

require github.com/rabbitmq/amqp091-go v1.5.0

replace github.com/rabbitmq/amqp091-go => /usr/share/gocode/src/github.com/rabbitmq/amqp091-go

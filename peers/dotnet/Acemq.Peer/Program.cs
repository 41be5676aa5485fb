using Acemq.Peer;

// The acemq-interop peer protocol on stdin/stdout; the log goes to stderr.
var host = new PeerHost(new Output(Console.OpenStandardOutput()));
return await host.RunAsync(Console.OpenStandardInput());

using System.Net.Security;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using RabbitMQ.Client;

namespace Acemq;

/// <summary>
/// TLS for <see cref="Mq.ConnectAsync(Uri, MqTls?, string, CancellationToken)"/> (or any
/// RabbitMQ.Client <see cref="ConnectionFactory"/>, through <see cref="ToSslOption"/>): the
/// server's certificate chain is verified against the CA certificates of a PEM file instead
/// of the system's trust store, and its name against the host connected to. No client
/// certificate.
/// </summary>
/// <example><code>
/// var tls = new MqTls("/etc/acemq/ca.pem");
/// await using var mq = await Mq.ConnectAsync(new Uri("amqps://app:secret@mq.internal/orders"), tls);
/// </code></example>
public sealed class MqTls
{
    private readonly X509Certificate2Collection _authorities;

    /// <summary>Reads the CA certificates of <paramref name="caFile"/> (PEM, one or more).</summary>
    /// <exception cref="ArgumentException">The file holds no certificate.</exception>
    public MqTls(string caFile)
    {
        ArgumentException.ThrowIfNullOrEmpty(caFile);
        CaFile = caFile;
        _authorities = [];
        _authorities.ImportFromPemFile(caFile);
        if (_authorities.Count == 0)
        {
            throw new ArgumentException($"{caFile} holds no certificate: give the CA certificate in PEM", nameof(caFile));
        }
    }

    /// <summary>The PEM file the CA certificates came from.</summary>
    public string CaFile { get; }

    /// <summary>The name the server's certificate must carry; null: the host of the URI.</summary>
    public string? ServerName { get; init; }

    /// <summary>
    /// RabbitMQ.Client's TLS options for a connection to <paramref name="host"/>
    /// (<c>ConnectionFactory.Ssl</c>): TLS on, the name checked by <see cref="SslStream"/>,
    /// the chain checked here against <see cref="CaFile"/>. A server that fails either check
    /// fails the connection attempt with an <see cref="AuthenticationException"/> saying why.
    /// </summary>
    public SslOption ToSslOption(string host)
    {
        var serverName = ServerName ?? host;
        return new SslOption
        {
            Enabled = true,
            ServerName = serverName,
            AcceptablePolicyErrors = SslPolicyErrors.None,
            CertificateValidationCallback = (_, certificate, chain, errors) => Verify(serverName, certificate, chain, errors),
        };
    }

    /// <summary>
    /// SslStream has checked the name against its own trust store's chain; the chain is
    /// built again here with only this CA as a root. Throwing (rather than returning false,
    /// which SslStream reports as a bare "rejected by the callback") puts the reason in the
    /// connection's error.
    /// </summary>
    private bool Verify(string serverName, X509Certificate? certificate, X509Chain? offered, SslPolicyErrors errors)
    {
        if (certificate is null || errors.HasFlag(SslPolicyErrors.RemoteCertificateNotAvailable))
        {
            throw new AuthenticationException($"the server at '{serverName}' sent no certificate");
        }

        if (errors.HasFlag(SslPolicyErrors.RemoteCertificateNameMismatch))
        {
            throw new AuthenticationException(
                $"the server's certificate ({certificate.Subject}) does not name '{serverName}' in its subjectAltName");
        }

        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.AddRange(_authorities);
        // No revocation lists for a private CA; the broker's certificate is what is checked.
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        if (offered is not null)
        {
            // The intermediates the server sent, never as roots.
            chain.ChainPolicy.ExtraStore.AddRange(offered.ChainPolicy.ExtraStore);
        }

        using var leaf = new X509Certificate2(certificate);
        if (chain.Build(leaf))
        {
            return true;
        }

        var why = string.Join("; ", chain.ChainStatus.Select(s => $"{s.Status}: {s.StatusInformation.Trim()}").Distinct());
        throw new AuthenticationException(
            $"the server's certificate ({leaf.Subject}, issued by {leaf.Issuer}) does not verify against {CaFile}: {why}");
    }
}

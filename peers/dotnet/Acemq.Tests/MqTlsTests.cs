using System.Net.Security;
using System.Security.Authentication;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using RabbitMQ.Client;

namespace Acemq.Tests;

/// <summary>
/// MqTls without a broker: certificates made here (a CA, a server certificate it signs, an
/// unrelated CA) go through the validation callback RabbitMQ.Client's SslStream would call.
/// </summary>
public sealed class MqTlsTests : IDisposable
{
    private readonly string _dir = Directory.CreateTempSubdirectory("acemq-tls-test-").FullName;
    private readonly X509Certificate2 _ca = Authority("CN=acemq test CA");
    private readonly X509Certificate2 _otherCa = Authority("CN=some other CA");

    public void Dispose()
    {
        _ca.Dispose();
        _otherCa.Dispose();
        Directory.Delete(_dir, recursive: true);
    }

    [Fact]
    public void The_options_turn_TLS_on_for_the_host_unless_a_server_name_is_given()
    {
        var tls = new MqTls(Pem("ca.pem", _ca));
        var option = tls.ToSslOption("127.0.0.1");
        Assert.True(option.Enabled);
        Assert.Equal("127.0.0.1", option.ServerName);
        Assert.Equal(SslPolicyErrors.None, option.AcceptablePolicyErrors);
        Assert.NotNull(option.CertificateValidationCallback);
        Assert.Equal("mq.internal", new MqTls(tls.CaFile) { ServerName = "mq.internal" }.ToSslOption("127.0.0.1").ServerName);
    }

    [Fact]
    public void A_server_certificate_signed_by_the_CA_verifies()
    {
        using var server = Signed(_ca, "CN=localhost");
        var option = new MqTls(Pem("ca.pem", _ca)).ToSslOption("localhost");
        // Not in the system's store, so SslStream reports chain errors; the callback decides.
        Assert.True(option.CertificateValidationCallback!(this, server, null, SslPolicyErrors.RemoteCertificateChainErrors));
    }

    [Fact]
    public void A_server_certificate_of_another_CA_fails_naming_the_CA_file()
    {
        using var server = Signed(_ca, "CN=localhost");
        var caFile = Pem("other.pem", _otherCa);
        var option = new MqTls(caFile).ToSslOption("localhost");
        var error = Assert.Throws<AuthenticationException>(
            () => option.CertificateValidationCallback!(this, server, null, SslPolicyErrors.RemoteCertificateChainErrors));
        Assert.Contains($"does not verify against {caFile}", error.Message);
    }

    [Fact]
    public void A_name_mismatch_fails_even_with_a_good_chain()
    {
        using var server = Signed(_ca, "CN=elsewhere.example");
        var option = new MqTls(Pem("ca.pem", _ca)).ToSslOption("127.0.0.1");
        var error = Assert.Throws<AuthenticationException>(
            () => option.CertificateValidationCallback!(this, server, null, SslPolicyErrors.RemoteCertificateNameMismatch));
        Assert.Contains("does not name '127.0.0.1'", error.Message);
    }

    [Fact]
    public void A_file_without_a_certificate_and_a_plain_uri_are_refused()
    {
        var empty = Path.Combine(_dir, "empty.pem");
        File.WriteAllText(empty, "");
        Assert.Contains("holds no certificate", Assert.Throws<ArgumentException>(() => new MqTls(empty)).Message);

        var tls = new MqTls(Pem("ca.pem", _ca));
        var factory = new ConnectionFactory();
        Assert.Throws<ArgumentException>(() => Mq.UseTls(factory, new Uri("amqp://localhost/"), tls));
        var uri = new Uri("amqps://guest:guest@127.0.0.1:5671/");
        factory.Uri = uri;
        Mq.UseTls(factory, uri, tls);
        Assert.True(factory.Ssl.Enabled);
        Assert.Equal("127.0.0.1", factory.Ssl.ServerName);
    }

    private string Pem(string name, X509Certificate2 certificate)
    {
        var path = Path.Combine(_dir, name);
        File.WriteAllText(path, certificate.ExportCertificatePem());
        return path;
    }

    private static X509Certificate2 Authority(string subject)
    {
        using var key = RSA.Create(2048);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign, true));
        return request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(1));
    }

    private static X509Certificate2 Signed(X509Certificate2 authority, string subject)
    {
        using var key = RSA.Create(2048);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, false));
        return request.Create(authority, DateTimeOffset.UtcNow.AddHours(-1), DateTimeOffset.UtcNow.AddHours(12), [1, 2, 3, 4]);
    }
}

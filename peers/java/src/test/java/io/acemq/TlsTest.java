package io.acemq;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Tls without a broker: the CA file read, the factory switched to TLS, the host name check asked of each socket. */
class TlsTest {
    /** A self-signed CA certificate (no key kept), valid for a century. */
    private static final String CA_PEM = """
            -----BEGIN CERTIFICATE-----
            MIIDHTCCAgWgAwIBAgIUZQa4HUOCYM72DYT8aBgwKG5VV8gwDQYJKoZIhvcNAQEL
            BQAwHTEbMBkGA1UEAwwSYWNlbXEgdW5pdC10ZXN0IENBMCAXDTI2MTIwMTEyNTMx
            MloYDzIxMjYxMTA3MTI1MzEyWjAdMRswGQYDVQQDDBJhY2VtcSB1bml0LXRlc3Qg
            Q0EwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCS4PTLd8vHJSyeHJtN
            9dnakIn/cJFDk6Emd0KuoTIy4X9utIae4h+y5d6gwroEIpK5ma7tqBRXtaJIqrNz
            cZZp5TaJInq+UZBdt149sjl+lEYQbVjzh0twZ9v+i4PmqOI0bwmrSxVtAqLS0V9G
            6FpXbYU3wq/XUt5+WPePrErWG/EdiX/N2jNl2rOX1iFBXyJqtrvqSbaCvpdFKhSu
            VKVpNnx/zH4UbUgXQvnUNAvk7KQkwhzBTWvlamTo1P4wVpeP5kLkSNf+oXmwD+40
            fCU2BzTeEc9aq2+F5dpcRd5C1EMjX6AbFeYTNqJCxpIHLWPsJNMsYuEcUzXm4Xpp
            cSC3AgMBAAGjUzBRMB0GA1UdDgQWBBQpxUrkOVirDjKi0/dwWDqM753EkDAfBgNV
            HSMEGDAWgBQpxUrkOVirDjKi0/dwWDqM753EkDAPBgNVHRMBAf8EBTADAQH/MA0G
            CSqGSIb3DQEBCwUAA4IBAQBDl7AuGL8cUa+9nnRuqD3QCb1tNo8+ioJobpUEwzxc
            AF9747NCVrLR/B3eruWLoib54plYk3tHeHVqfStqxUJRYaKc7cRM1Qba1844oFgf
            iJ15YqiaIagydFpnCEsewyVfxxlsf6+tDFXfWb1sgmbwSdeC92k2s2o5NU8c/xPR
            ScmE+jD42zmxwypJVRCKus0IMfU1E/1+2v0WC+6+paZmleNpCl7QdZqAHCD3z/jH
            +DQO6qxjTA5DZm+NhZNfb1OrwJp0HClUhrBz7f9+eacQDYV2XIrnbxL60IwYSrfk
            OkfyJB8KDoWs6Jk26T/8iZtDyBM7dn294KWlKavWV3vP
            -----END CERTIFICATE-----
            """;

    @TempDir
    Path dir;

    @Test
    void readsTheCaCertificateFromPem() throws Exception {
        Path ca = write("ca.pem", CA_PEM);
        X509Certificate certificate = (X509Certificate) Tls.readCertificates(ca).iterator().next();
        assertEquals("CN=acemq unit-test CA", certificate.getSubjectX500Principal().getName());
        assertNotNull(Tls.context(ca));
    }

    @Test
    void aFileWithoutACertificateIsRefused() throws Exception {
        GeneralSecurityException error = assertThrows(GeneralSecurityException.class,
                () -> Tls.context(write("empty.pem", "")));
        assertTrue(error.getMessage().contains("holds no certificate"), error.getMessage());
        assertThrows(IOException.class, () -> Tls.context(dir.resolve("missing.pem")));
    }

    @Test
    void verifyMakesTheFactoryTlsWithTheHostNameChecked() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri("amqps://guest:guest@127.0.0.1:5671/");
        Tls.verify(factory, write("ca.pem", CA_PEM));
        assertTrue(factory.isSSL());
        // What the client does with each socket before connecting it.
        try (SSLSocket socket = (SSLSocket) factory.getSocketFactory().createSocket()) {
            factory.getSocketConfigurator().configure(socket);
            assertEquals("HTTPS", socket.getSSLParameters().getEndpointIdentificationAlgorithm());
            assertTrue(socket.getTcpNoDelay(), "the client's own socket settings are kept");
        }
    }

    private Path write(String name, String text) throws IOException {
        return Files.writeString(dir.resolve(name), text);
    }
}

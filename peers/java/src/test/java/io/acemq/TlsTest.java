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
import java.security.cert.CertificateException;
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
    void verifyMakesTheFactoryTlsAndKeepsItsSocketSettings() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri("amqps://guest:guest@127.0.0.1:5671/");
        Tls.verify(factory, write("ca.pem", CA_PEM));
        assertTrue(factory.isSSL());
        // What the client does with each socket before connecting it: its own settings.
        try (SSLSocket socket = (SSLSocket) factory.getSocketFactory().createSocket()) {
            factory.getSocketConfigurator().configure(socket);
            assertTrue(socket.getTcpNoDelay(), "the client's own socket settings are kept");
        }
    }

    /** A certificate whose subjectAltName is IP:127.0.0.1 only (its CN says localhost: never read). */
    private static final String IP_ONLY_PEM = """
            -----BEGIN CERTIFICATE-----
            MIIDHDCCAgSgAwIBAgIUdUK/8GxLnv7sMC6RhxW/3Jni6M4wDQYJKoZIhvcNAQEL
            BQAwFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMzA5MjUyNVoYDzIxMjYx
            MTA5MDkyNTI1WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwggEiMA0GCSqGSIb3DQEB
            AQUAA4IBDwAwggEKAoIBAQCq/ULCNJrFJ4HIwSlue2IFjBnMjc4GgdZjwkgGEQQF
            uh2ZhPoHvF8erC/BsxYDFsuiidTfdpsSOydbovk77PrwE3cYk2D5yB4jduy/i5vf
            sNcCapf1M0xR0ya9sj2n5EQgxbmlJNT51w9RvIai/rcHZiMmbDINTRaT7MwE12h3
            pEoaTxXHdmscqW34e945x5KjsJQOEHN8jEszhktz8wB86ms8V+tL+iht+lhBcoLp
            rpNF2O7SER+j9pb1qy11GewBdUSLJM6GeVNPffIze0cog5gP3yliRV9HGrygNFFm
            8oe13AsUytBefPDMjnUbbTodjmUcVxUg5S2tWklinaGlAgMBAAGjZDBiMB0GA1Ud
            DgQWBBRBDi+YUxzpqr6zhqIDBSpZLWUo8jAfBgNVHSMEGDAWgBRBDi+YUxzpqr6z
            hqIDBSpZLWUo8jAPBgNVHRMBAf8EBTADAQH/MA8GA1UdEQQIMAaHBH8AAAEwDQYJ
            KoZIhvcNAQELBQADggEBAI0w+PKvJOc2/mIN5z/BVTiFtuI8ZxXaRKeHlHQ7gN7I
            95wUzME3u0bY+pqrFqxU9XVqDFcb/psntN2nR4nvWrPbcJIIswpihpnM6pl4SEJd
            ZOb2pLqX7r8VLm6X5ZhyWCwmWw6VQIeH7WKHgbF+J/3F2RQ5kmfwRPEdufV4+fqM
            JMyeevX0kIBoxODeDW0hAoTls78Bw0pcIJsMyIbaqXx3LcMPDKeM5flQs9HGb4r9
            3eEyvB42iJvFIv9yxskqyBEUsDSijWvCpesWwE1+NOKfGD3R8rsTMSPgvBqIQ75M
            ynp/mQO0rli9NLH0ByW3HjMm2Mh8EL/YOrBpYLKVgmk=
            -----END CERTIFICATE-----
            """;

    /** A certificate whose subjectAltName is DNS:localhost, DNS:*.example.com. */
    private static final String DNS_PEM = """
            -----BEGIN CERTIFICATE-----
            MIIDMDCCAhigAwIBAgIUAqsOBrYeBRn6O6nL11vJ6/rFn5owDQYJKoZIhvcNAQEL
            BQAwFDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMzA5MjUyNloYDzIxMjYx
            MTA5MDkyNTI2WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwggEiMA0GCSqGSIb3DQEB
            AQUAA4IBDwAwggEKAoIBAQDQb8cUhxnAmznE98dHSQXvXTt6ti/JKsGapdgXSqG0
            7m+Qq749HZpXCQbIO65ryHqlaiYQFj1l922ZPkX4KdMIxGB4W/2LkrsGyithTWxp
            0uEcJbB3u1TLGlUoHW4Fay0l9ysiZZ0U9RImywqeHt6D/gsRu/yhPF4fFyLm1JAv
            t8CkHVRUcDx2B8/iFQiZDtuVxw8bLChBjrQ3LHaEvcYWS1XyoqBYxOD7yrBVmEq4
            GbUncwpTBuJnz4OmEbPEkGJRn7u43XFmeQ8zpujZHGi6BJLUBo8c51EJq2qRTG5A
            HPzMVRtmXlMKbKn21+0T5Rog6CmmdKHQCLL5BCZN2vt5AgMBAAGjeDB2MB0GA1Ud
            DgQWBBR3RmZWRWkjwdzgAQpCEgUr86z8uDAfBgNVHSMEGDAWgBR3RmZWRWkjwdzg
            AQpCEgUr86z8uDAPBgNVHRMBAf8EBTADAQH/MCMGA1UdEQQcMBqCCWxvY2FsaG9z
            dIINKi5leGFtcGxlLmNvbTANBgkqhkiG9w0BAQsFAAOCAQEAuPadhX9cnClb5ijP
            yjQY3G1JFH+BgV5E14SZ3yo4wXBUl2EHjBQDwGqigilI5/BG2MT3v6MmwsRBP6qr
            cxQstqHOlyIqP8m60Us3vz3V9OoeND9f7rJbplpGqeDMKQp8z0F0d8ABsykwhXc3
            8Z+h6FIeGbdjZm3I951NqM5bgtU6K7vYClcIwPGBdKAHpCefiipQPQ6OL9BnHhC8
            rcWOMu6KFK2Pnzlzjp+S4q7n6+vX1AZOtnf4xcyNAqwWZnrYeCsITYGYAIYh7ST6
            5Ae7yBpT5mYHmwwJK6RcFILyzKk8Oa/GqrfYuwasxKnzGrnOCkDFNY/2BeldQBVV
            pbWDNg==
            -----END CERTIFICATE-----
            """;

    @Test
    void theHostIsCheckedAsTheUrlGivesItNotAsItResolves() throws Exception {
        X509Certificate ipOnly = (X509Certificate) Tls.readCertificates(write("ip.pem", IP_ONLY_PEM)).iterator().next();
        Tls.checkHost(ipOnly, "127.0.0.1");
        // localhost resolves to 127.0.0.1, but the certificate does not name it (nor is the CN read).
        CertificateException refused = assertThrows(CertificateException.class, () -> Tls.checkHost(ipOnly, "localhost"));
        assertTrue(refused.getMessage().contains("does not name localhost"), refused.getMessage());
        assertThrows(CertificateException.class, () -> Tls.checkHost(ipOnly, "127.1"));
        assertThrows(CertificateException.class, () -> Tls.checkHost(ipOnly, "127.0.0.2"));

        X509Certificate dns = (X509Certificate) Tls.readCertificates(write("dns.pem", DNS_PEM)).iterator().next();
        Tls.checkHost(dns, "localhost");
        Tls.checkHost(dns, "LOCALHOST.");
        Tls.checkHost(dns, "mq.example.com");
        assertThrows(CertificateException.class, () -> Tls.checkHost(dns, "a.mq.example.com"));
        assertThrows(CertificateException.class, () -> Tls.checkHost(dns, "example.com"));
        assertThrows(CertificateException.class, () -> Tls.checkHost(dns, "127.0.0.1"));
        assertThrows(CertificateException.class, () -> Tls.checkHost(dns, "[::1]"));
    }

    private Path write(String name, String text) throws IOException {
        return Files.writeString(dir.resolve(name), text);
    }
}

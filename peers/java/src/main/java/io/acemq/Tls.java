package io.acemq;

import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.SocketConfigurator;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.Objects;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * TLS for the connections a {@link ConnectionFactory} opens, verified: the server's
 * certificate chain against the CA certificates of a PEM file (or the JVM's trust store), and
 * the host the factory connects to against the certificate's subjectAltName.
 *
 * <p>Why this class: amqp-client 5.0.0 given an {@code amqps://} URI, or {@code
 * useSslProtocol()}, trusts any certificate, and it has no host name check of its own (that
 * came in 5.4). Here the chain goes through the JDK's PKIX trust manager and the host name
 * through the JDK's endpoint identification ({@code HTTPS}, RFC 2818), set on each socket by
 * a socket configurator. The name check needs the blocking socket I/O the factory uses by
 * default; with {@code useNio()} only the chain is verified.
 *
 * <pre>{@code
 * ConnectionFactory factory = new ConnectionFactory();
 * factory.setUri("amqps://app:secret@mq.internal:5671/orders");
 * Tls.verify(factory, Path.of("/etc/acemq/ca.pem"));
 * }</pre>
 */
public final class Tls {
    private Tls() {
    }

    /**
     * Makes every connection of {@code factory} TLS, trusting only the CA certificates in
     * {@code caFile} (PEM; one or more); a {@code null} file means the JVM's default trust
     * store. Call it after {@code setUri}: an {@code amqps} URI set later would not undo it,
     * but anything calling {@code useSslProtocol} afterwards would.
     *
     * @return {@code factory}, for chaining
     * @throws IOException when {@code caFile} cannot be read
     * @throws GeneralSecurityException when it holds no usable certificate
     */
    public static ConnectionFactory verify(ConnectionFactory factory, Path caFile)
            throws IOException, GeneralSecurityException {
        Objects.requireNonNull(factory, "factory");
        factory.useSslProtocol(caFile == null ? defaultContext() : context(caFile));
        SocketConfigurator plain = factory.getSocketConfigurator();
        factory.setSocketConfigurator(socket -> {
            plain.configure(socket);
            if (socket instanceof SSLSocket ssl) {
                checkHostName(ssl);
            }
        });
        return factory;
    }

    /** A TLS context whose trust managers accept exactly the chains ending at a CA of {@code caFile}. */
    public static SSLContext context(Path caFile) throws IOException, GeneralSecurityException {
        KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
        trusted.load(null, null);
        int index = 0;
        for (Certificate authority : readCertificates(caFile)) {
            trusted.setCertificateEntry("ca-" + index++, authority);
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }

    private static SSLContext defaultContext() throws GeneralSecurityException {
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, null, null); // null trust managers: the JVM's default trust store
        return context;
    }

    /** The certificates of a PEM (or DER) file; none is an error, not an empty trust store. */
    static Collection<? extends Certificate> readCertificates(Path file) throws IOException, GeneralSecurityException {
        Collection<? extends Certificate> certificates;
        try (InputStream in = Files.newInputStream(file)) {
            certificates = CertificateFactory.getInstance("X.509").generateCertificates(in);
        }
        if (certificates.isEmpty()) {
            throw new GeneralSecurityException(file + " holds no certificate: give the CA certificate in PEM");
        }
        return certificates;
    }

    /**
     * Asks the JDK to check the server's certificate against the host being connected to
     * during the handshake. The client connects the socket after configuring it, so the JDK
     * takes the host from that connect (a name or an IP literal, matched against DNS or IP
     * subjectAltNames).
     */
    private static void checkHostName(SSLSocket socket) {
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        socket.setSSLParameters(parameters);
    }
}

# A local .NET SDK base image, for machines that cannot pull mcr.microsoft.com/dotnet/sdk
# (this project's CI): a Debian base plus the SDK installed on the machine. ci/images.sh
# builds it with the SDK folder as the context:
#   docker build -f ci/dotnet-sdk.Dockerfile --build-arg BASE_IMAGE=acemq-interop/base:bookworm \
#       -t acemq-interop/dotnet-sdk:10.0 /usr/share/dotnet
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
# "offline" where the machine cannot reach certificate revocation lists (ci/images.sh passes
# the host's NUGET_CERT_REVOCATION_MODE).
ARG NUGET_CERT_REVOCATION_MODE=online
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libc6 libgcc-s1 libicu72 libssl3 libstdc++6 tzdata zlib1g \
 && rm -rf /var/lib/apt/lists/*
COPY . /usr/share/dotnet/
RUN ln -sf /usr/share/dotnet/dotnet /usr/bin/dotnet && dotnet --info >/dev/null
ENV DOTNET_ROOT=/usr/share/dotnet DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 \
    DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1 DOTNET_GENERATE_ASPNET_CERTIFICATE=false \
    NUGET_CERT_REVOCATION_MODE=${NUGET_CERT_REVOCATION_MODE}
CMD ["dotnet", "--info"]

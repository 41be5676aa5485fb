# A local .NET runtime base image (the counterpart of mcr.microsoft.com/dotnet/runtime):
# the muxer, host and Microsoft.NETCore.App copied from the local SDK image onto a Debian
# base. ci/images.sh builds it (the context is an empty folder):
#   docker build -f ci/dotnet-runtime.Dockerfile --build-arg SDK_IMAGE=acemq-interop/dotnet-sdk:10.0 \
#       --build-arg BASE_IMAGE=acemq-interop/base:bookworm -t acemq-interop/dotnet-runtime:10.0 EMPTY_DIR
ARG SDK_IMAGE=acemq-interop/dotnet-sdk:10.0
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${SDK_IMAGE} AS sdk

FROM ${BASE_IMAGE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libc6 libgcc-s1 libicu72 libssl3 libstdc++6 tzdata zlib1g \
 && rm -rf /var/lib/apt/lists/*
COPY --from=sdk /usr/share/dotnet/dotnet /usr/share/dotnet/LICENSE.txt /usr/share/dotnet/ThirdPartyNotices.txt /usr/share/dotnet/
COPY --from=sdk /usr/share/dotnet/host /usr/share/dotnet/host
COPY --from=sdk /usr/share/dotnet/shared/Microsoft.NETCore.App /usr/share/dotnet/shared/Microsoft.NETCore.App
RUN ln -sf /usr/share/dotnet/dotnet /usr/bin/dotnet && dotnet --list-runtimes
ENV DOTNET_ROOT=/usr/share/dotnet DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
CMD ["dotnet", "--list-runtimes"]

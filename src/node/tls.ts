// TLS material from node.yaml's `tls` section: the node's
// certificate and key for its REST and gRPC servers, and the CA and domain
// name it expects from its peers' gRPC servers.
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { TlsConfig } from '../config/node-config';

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
  domainName: string;
}

export function readTls(tls: TlsConfig | undefined): TlsMaterial | null {
  if (!tls || (!tls.rest && !tls.grpc)) return null;
  return {
    cert: fs.readFileSync(tls.certPath!),
    key: fs.readFileSync(tls.pkeyPath!),
    ca: fs.readFileSync(tls.caCertPath),
    domainName: tls.domainName,
  };
}

export function grpcServerCredentials(m: TlsMaterial): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(null, [{ cert_chain: m.cert, private_key: m.key }], false);
}

/** Credentials for calling peers: their certificates must chain to the CA and name `domain_name`. */
export function grpcChannel(m: TlsMaterial): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  return {
    credentials: grpc.credentials.createSsl(m.ca),
    options: { 'grpc.ssl_target_name_override': m.domainName, 'grpc.default_authority': m.domainName },
  };
}

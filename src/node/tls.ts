// TLS material from node.yaml's `tls` section: the node's
// certificate and key for its REST and gRPC servers, and the CA and domain
// name it expects from its peers' gRPC servers.
import crypto from 'node:crypto';
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { TlsConfig } from '../config/node-config';

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer;
  domainName: string;
  /** When the node's certificate and the CA's expire, in seconds since the epoch. */
  expires: { node: number; ca: number };
}

export function readTls(tls: TlsConfig | undefined): TlsMaterial | null {
  if (!tls || (!tls.rest && !tls.grpc)) return null;
  const cert = fs.readFileSync(tls.certPath!);
  const ca = fs.readFileSync(tls.caCertPath);
  const expiry = (pem: Buffer) => Date.parse(new crypto.X509Certificate(pem).validTo) / 1000;
  return { cert, key: fs.readFileSync(tls.pkeyPath!), ca, domainName: tls.domainName, expires: { node: expiry(cert), ca: expiry(ca) } };
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
